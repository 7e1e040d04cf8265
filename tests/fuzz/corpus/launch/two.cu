// kevo:launch tmpl<true, 4> grid=(rows, 2) block=(32,4) smem=(cols*4) args=(y,alpha)
// kevo:launch k2 grid=1 block=32 args=()
