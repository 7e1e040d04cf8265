# What a hostile reference.py tries when kevo's torch reference worker runs
# it (tests/import/hostile_ref.sh prepends this to an imported task's
# reference.py), with @HOME_DIR@, @SECRET_FILE@ and @PORT@ filled in by the test.
import socket as _socket

_outcome = []
try:
    with open("@HOME_DIR@/planted_by_reference", "w") as _f:
        _f.write("planted\n")
    _outcome.append("write=DONE")
except OSError as _e:
    _outcome.append("write=refused(%s)" % type(_e).__name__)
try:
    with open("@SECRET_FILE@") as _f:
        _outcome.append("read=DONE:" + _f.read().strip())
except OSError as _e:
    _outcome.append("read=refused(%s)" % type(_e).__name__)
try:
    _s = _socket.create_connection(("127.0.0.1", @PORT@), timeout=3)
    _s.sendall(b"hello from reference.py\n")
    _s.close()
    _outcome.append("connect=DONE")
except OSError as _e:
    _outcome.append("connect=refused(%s)" % type(_e).__name__)
import resource as _resource

_data = _resource.getrlimit(_resource.RLIMIT_DATA)[0]
_outcome.append("memory=%s" % ("unlimited" if _data == _resource.RLIM_INFINITY
                               else "capped(%d GiB)" % (_data >> 30)))
raise RuntimeError("HOSTILE " + " ".join(_outcome))
