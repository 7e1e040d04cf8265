/* kevo report: the page's only script (embedded by lib/report/CMakeLists.txt
 * and allowed by its hash in the page's Content-Security-Policy). The charts
 * are already in the page as SVG; this adds the node panel, zoom and pan of
 * the tree, and the links between views. Data comes from each section's
 * JSON block (a script element of type application/json) and reaches the
 * page only through textContent and attributes, never as markup. */
(function () {
  'use strict';
  var status = document.getElementById('kevo-status');
  var errors = [];
  function noteError(msg) {
    errors.push(String(msg));
    if (status) {
      status.setAttribute('data-errors', String(errors.length));
      status.setAttribute('data-error-messages', errors.join(' | ').slice(0, 2000));
    }
  }
  window.addEventListener('error', function (e) {
    noteError((e && e.message) || 'error');
  });
  window.addEventListener('unhandledrejection', function (e) {
    noteError('unhandled rejection: ' + (e && e.reason));
  });

  var verdicts = [];
  try {
    verdicts = JSON.parse(document.getElementById('kevo-verdicts').textContent);
  } catch (e) {
    noteError('verdict palette: ' + e.message);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmtX(s) {
    return (s >= 100 ? s.toFixed(0) : s.toFixed(2)) + '\u00d7';
  }
  function fmtUs(us) {
    if (!(us >= 0)) return '-';
    if (us >= 1e6) return (us / 1e6).toFixed(2) + ' s';
    if (us >= 1e3) return (us / 1e3).toFixed(2) + ' ms';
    return us.toFixed(1) + ' \u00b5s';
  }
  function fmtBytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1048576).toFixed(1) + ' MiB';
  }
  /* A node's text, or where it is when the page left it out ("key!" holds
   * its length then), or null. */
  function txt(o, k) {
    if (typeof o[k] === 'string') return o[k];
    var n = o[k + '!'];
    if (typeof n !== 'number') return null;
    var src = k === 'df' || k === 'src' || k === 'rp';
    var where = src
      ? "SELECT text FROM sources WHERE hash = '" + o.h + "'"
      : k === 'pl' || k === 'pa'
        ? 'SELECT ' + (k === 'pl' ? 'plan' : 'params') + ' FROM nodes WHERE id = ' + o.id
        : k === 'det'
          ? 'SELECT detail FROM evaluations WHERE id = ' + o.e
          : 'SELECT result_json FROM evaluations WHERE id = ' + o.e;
    return '[' + (k === 'df' ? 'this diff, ' : '') + n + ' bytes, left out to keep the page under its size cap; ' +
      (k === 'df' ? 'the source' : 'the whole text') + ' is in the store: ' + where + ']';
  }
  function badge(v, other) {
    var k = verdicts.indexOf(v);
    if (k < 0) k = verdicts.length - 1;
    return el('span', 'vb v' + k, other || v);
  }

  function setupZoom(svg, tools) {
    var b = svg.viewBox.baseVal;
    var full = { x: b.x, y: b.y, w: b.width, h: b.height };
    var view = { x: full.x, y: full.y, w: full.w, h: full.h };
    function apply() {
      svg.setAttribute('viewBox', view.x + ' ' + view.y + ' ' + view.w + ' ' + view.h);
      /* Zoomed far out, nodes keep half their size on screen (up to six
       * times their size in the drawing), so that colours stay visible. */
      var s = Math.min((svg.clientWidth || 800) / view.w, (svg.clientHeight || 600) / view.h);
      svg.style.setProperty('--k', Math.min(6, Math.max(1, 0.5 / s)).toFixed(3));
    }
    function zoomAt(f, cx, cy) {
      var w = view.w * f;
      if (w < 80 || w > full.w * 2 + 400) return;
      var h = view.h * f;
      view.x = cx - (cx - view.x) * f;
      view.y = cy - (cy - view.y) * f;
      view.w = w;
      view.h = h;
      apply();
    }
    function toSvg(clientX, clientY) {
      var m = svg.getScreenCTM();
      if (!m) return { x: view.x + view.w / 2, y: view.y + view.h / 2 };
      var p = svg.createSVGPoint();
      p.x = clientX;
      p.y = clientY;
      return p.matrixTransform(m.inverse());
    }
    /* The wheel scrolls the page; with Ctrl (or a trackpad's pinch) it zooms. */
    svg.addEventListener(
      'wheel',
      function (e) {
        if (!e.ctrlKey && !e.metaKey) return;
        e.preventDefault();
        var p = toSvg(e.clientX, e.clientY);
        zoomAt(e.deltaY < 0 ? 0.8 : 1.25, p.x, p.y);
      },
      { passive: false }
    );
    var drag = null;
    svg.addEventListener('pointerdown', function (e) {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false };
    });
    svg.addEventListener('pointermove', function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) {
        drag.moved = true;
        svg.setPointerCapture(e.pointerId);
        svg.classList.add('dragging');
      }
      var m = svg.getScreenCTM();
      var scale = m ? 1 / m.a : 1;
      view.x = drag.vx - dx * scale;
      view.y = drag.vy - dy * scale;
      apply();
    });
    function end(e) {
      if (drag && drag.moved) {
        svg.classList.remove('dragging');
        svg.setAttribute('data-dragged', '1'); /* the click that follows is not a selection */
        try {
          svg.releasePointerCapture(e.pointerId);
        } catch (err) {
          /* capture already gone */
        }
      }
      drag = null;
    }
    svg.addEventListener('pointerup', end);
    svg.addEventListener('pointercancel', end);
    if (tools) {
      tools.addEventListener('click', function (e) {
        var t = e.target.closest('button[data-z]');
        if (!t) return;
        var z = t.getAttribute('data-z');
        if (z === 'fit') {
          view = { x: full.x, y: full.y, w: full.w, h: full.h };
          apply();
        } else {
          zoomAt(z === 'in' ? 0.66 : 1.5, view.x + view.w / 2, view.y + view.h / 2);
        }
      });
    }
    return {
      apply: apply,
      /* Brings (x, y) into view, zooming in on a tree too wide to read. */
      show: function (x, y) {
        var px = svg.clientWidth || 800;
        if (view.w / px > 3) {
          var f = (px * 3) / view.w;
          view.w *= f;
          view.h *= f;
        }
        if (x < view.x || x > view.x + view.w || y < view.y || y > view.y + view.h) {
          view.x = x - view.w / 2;
          view.y = y - view.h / 3;
          apply();
        } else {
          apply();
        }
      }
    };
  }

  function setupRun(sec) {
    var data = JSON.parse(sec.querySelector('script.kv-data').textContent);
    var nodes = data.nodes;
    var runId = data.run;
    var tree = sec.querySelector('svg.treesvg');
    var panel = sec.querySelector('aside.panel');
    var treeC = [], pts = [], edges = [], kids = [];
    var i;
    for (i = 0; i < nodes.length; i++) kids.push([]);
    for (i = 0; i < nodes.length; i++) if (nodes[i].p >= 0 && nodes[i].p < nodes.length) kids[nodes[i].p].push(i);
    tree.querySelectorAll('circle.n').forEach(function (c) {
      treeC[+c.getAttribute('data-i')] = c;
    });
    tree.querySelectorAll('path.e').forEach(function (p) {
      edges[+p.getAttribute('data-c')] = p;
    });
    sec.querySelectorAll('svg circle.pt').forEach(function (c) {
      pts[+c.getAttribute('data-i')] = c;
    });
    var zoom = setupZoom(tree, sec.querySelector('.tools'));
    zoom.apply();
    var selected = -1;

    function link(j, text) {
      var a = el('a', null, text);
      a.href = '#run-' + runId + '-n' + nodes[j].id;
      a.setAttribute('data-i', String(j));
      return a;
    }
    function pre(cls, text) {
      return el('pre', cls, text);
    }
    function heading(text) {
      panel.appendChild(el('h5', null, text));
    }
    function line(label, value) {
      var p = el('p', 'kv');
      p.appendChild(el('span', 'k', label));
      if (typeof value === 'string') p.appendChild(document.createTextNode(value));
      else p.appendChild(value);
      panel.appendChild(p);
      return p;
    }
    function diffPre(text) {
      var p = el('pre', 'diff');
      var lines = text.split('\n');
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      lines.forEach(function (l) {
        var c = l.charAt(0);
        p.appendChild(el('span', c === '+' ? 'a' : c === '-' ? 'd' : c === '@' ? 'h' : 'c', l));
      });
      return p;
    }
    function timingTable(tm) {
      var t = el('table', 'timing');
      var head = el('tr');
      ['side', 'median', 'IQR', 'CV', 'n'].forEach(function (h, k) {
        head.appendChild(el('th', k ? 'num' : null, h));
      });
      t.appendChild(head);
      [
        ['candidate', tm.c],
        ['reference', tm.ref],
        ['reference alone', tm.alone],
        ['baseline', tm.base]
      ].forEach(function (row) {
        var s = row[1];
        if (!s) return;
        var tr = el('tr');
        tr.appendChild(el('td', null, row[0]));
        tr.appendChild(el('td', 'num', fmtUs(s[0])));
        tr.appendChild(el('td', 'num', fmtUs(s[1])));
        tr.appendChild(el('td', 'num', (s[2] * 100).toFixed(1) + '%'));
        tr.appendChild(el('td', 'num', String(s[3])));
        t.appendChild(tr);
      });
      return t;
    }

    function render(j) {
      var o = nodes[j];
      panel.textContent = '';
      var h = el('h4');
      h.appendChild(document.createTextNode('step ' + o.s + ' \u00b7 ' + (o.a || '?') + ' '));
      h.appendChild(badge(o.v, o.vo));
      if (typeof o.x === 'number') h.appendChild(el('span', 'sp', ' ' + fmtX(o.x)));
      panel.appendChild(h);
      var meta = el('p', 'meta');
      meta.appendChild(document.createTextNode('node ' + o.id));
      if (o.p >= 0) {
        meta.appendChild(document.createTextNode(' \u00b7 parent: step '));
        meta.appendChild(link(o.p, String(nodes[o.p].s)));
      } else {
        meta.appendChild(document.createTextNode(' \u00b7 a root'));
      }
      if (o.e) meta.appendChild(document.createTextNode(' \u00b7 evaluation ' + o.e));
      if (typeof o.r === 'number') meta.appendChild(document.createTextNode(' \u00b7 reward ' + o.r.toFixed(3)));
      if (typeof o.t === 'number') meta.appendChild(document.createTextNode(' \u00b7 at +' + o.t + ' s'));
      panel.appendChild(meta);
      if (o.h) line('source ', o.h.slice(0, 16) + '\u2026' + (typeof o.sz === 'number' ? ' (' + fmtBytes(o.sz) + ')' : ''));
      if (txt(o, 'pa') !== null) line('params ', txt(o, 'pa'));
      if (kids[j].length) {
        var ks = el('span');
        kids[j].slice(0, 40).forEach(function (k, n) {
          if (n) ks.appendChild(document.createTextNode(' '));
          ks.appendChild(link(k, String(nodes[k].s)));
        });
        if (kids[j].length > 40) ks.appendChild(document.createTextNode(' and ' + (kids[j].length - 40) + ' more'));
        line('children: steps ', ks);
      }
      if (txt(o, 'pl') !== null) {
        heading('Plan');
        panel.appendChild(pre('plan', txt(o, 'pl')));
      }
      heading('Gate');
      if (txt(o, 'det') !== null) panel.appendChild(el('p', 'detail', txt(o, 'det')));
      else if (!o.e) panel.appendChild(el('p', 'muted', 'Not evaluated: nothing reached the gate.'));
      if (o.ck) line('checks ', o.ck[0] + ' of ' + o.ck[1] + ' passed');
      if (txt(o, 'ff') !== null) line('first failure ', txt(o, 'ff'));
      if (typeof o.cs === 'number') line('compile ', o.cs.toFixed(2) + ' s' + (o.cc ? ' (cached)' : ''));
      if (o.sec) line('seconds ', 'compile ' + o.sec[0].toFixed(2) + ', checks ' + o.sec[1].toFixed(2) + ', timing ' + o.sec[2].toFixed(2));
      if (o.tm) {
        var tm = o.tm;
        var parts = [];
        if (typeof tm.sp === 'number') parts.push(fmtX(tm.sp) + ' the reference' + (txt(tm, 'sn') || ''));
        if (typeof tm.sb === 'number') parts.push(fmtX(tm.sb) + ' the baseline' + (txt(tm, 'bn') || ''));
        if (typeof tm.rf === 'number') parts.push((tm.rf * 100).toFixed(0) + '% of roofline');
        if (typeof tm.gbs === 'number') parts.push(tm.gbs.toFixed(1) + ' GB/s');
        if (typeof tm.gf === 'number') parts.push(tm.gf.toFixed(1) + ' GFLOP/s');
        line('timing ' + (tm.at ? 'at ' + tm.at + ' ' : ''), parts.join(' \u00b7 '));
        panel.appendChild(timingTable(tm));
        if (tm.raised) panel.appendChild(el('p', 'muted', "The candidate's median was raised to kevo's clock's floor (a noisy host)."));
        if (tm.timer) line('timers ', tm.timer);
      }
      if (o.k && o.k.length) {
        var kt = el('table', 'kernels');
        var kh = el('tr');
        ['kernel', 'regs', 'smem', 'stack', 'spills'].forEach(function (x, n) {
          kh.appendChild(el('th', n ? 'num' : null, x));
        });
        kt.appendChild(kh);
        o.k.forEach(function (k) {
          var tr = el('tr');
          tr.appendChild(el('td', 'kname', k[0]));
          tr.appendChild(el('td', 'num', String(k[1])));
          tr.appendChild(el('td', 'num', fmtBytes(k[2])));
          tr.appendChild(el('td', 'num', fmtBytes(k[3])));
          tr.appendChild(el('td', 'num' + (k[4] + k[5] > 0 ? ' bad' : ''), fmtBytes(k[4] + k[5])));
          kt.appendChild(tr);
        });
        heading('Resources');
        panel.appendChild(kt);
      }
      if (o.e) line('sandbox ', o.sbx || 'every layer active');
      [
        ['cl', 'Compile log'],
        ['so', "Candidate's stdout"],
        ['se', "Candidate's stderr"]
      ].forEach(function (t) {
        var x = txt(o, t[0]);
        if (x === null) return;
        heading(t[1]);
        panel.appendChild(pre('log', x));
      });
      var df = txt(o, 'df'), src = txt(o, 'src'), rp = txt(o, 'rp');
      if (df !== null) {
        heading('Diff to ' + (o.db || 'its parent'));
        if (df === '') panel.appendChild(el('p', 'muted', 'The same source.'));
        else panel.appendChild(diffPre(df));
      } else if (src !== null) {
        heading(o.dn ? 'Source (' + o.dn + ')' : o.p >= 0 ? 'Source' : 'Source (a root: nothing to diff against)');
        panel.appendChild(pre('code', src));
      } else if (rp !== null) {
        heading('The reply (no code in it)');
        panel.appendChild(pre('log', rp));
      }
      panel.scrollTop = 0;
    }

    function select(j, bringIntoView) {
      if (!(j >= 0 && j < nodes.length)) return;
      if (selected >= 0) {
        if (treeC[selected]) treeC[selected].classList.remove('sel');
        if (pts[selected]) pts[selected].classList.remove('sel');
        for (var k = selected; k >= 0; k = nodes[k].p) if (edges[k]) edges[k].classList.remove('chain');
      }
      selected = j;
      if (treeC[j]) treeC[j].classList.add('sel');
      if (pts[j]) pts[j].classList.add('sel');
      for (var a = j, guard = 0; a >= 0 && guard <= nodes.length; a = nodes[a].p, guard++) if (edges[a]) edges[a].classList.add('chain');
      render(j);
      if (bringIntoView && treeC[j]) zoom.show(+treeC[j].getAttribute('cx'), +treeC[j].getAttribute('cy'));
      if (status) status.setAttribute('data-selected', String(nodes[j].id));
    }

    sec.addEventListener('click', function (e) {
      var t = e.target.closest('[data-i]');
      if (!t || !sec.contains(t)) return;
      if (tree.getAttribute('data-dragged')) {
        tree.removeAttribute('data-dragged');
        if (tree.contains(t)) return;
      }
      e.preventDefault();
      var j = +t.getAttribute('data-i');
      select(j, !tree.contains(t));
      if (history.replaceState) history.replaceState(null, '', '#run-' + runId + '-n' + nodes[j].id);
    });
    tree.addEventListener('pointerdown', function () {
      tree.removeAttribute('data-dragged');
    });

    return {
      run: runId,
      byId: function (id) {
        for (var k = 0; k < nodes.length; k++) if (nodes[k].id === id) return k;
        return -1;
      },
      select: select,
      best: data.best,
      count: nodes.length
    };
  }

  var runs = [];
  document.querySelectorAll('section.run').forEach(function (sec) {
    try {
      runs.push(setupRun(sec));
    } catch (e) {
      noteError('run section ' + sec.id + ': ' + e.message);
    }
  });
  function fromHash() {
    var m = /^#run-(\d+)-n(\d+)$/.exec(location.hash);
    if (!m) return false;
    for (var k = 0; k < runs.length; k++)
      if (String(runs[k].run) === m[1]) {
        var j = runs[k].byId(+m[2]);
        if (j >= 0) {
          runs[k].select(j, true);
          return true;
        }
      }
    return false;
  }
  window.addEventListener('hashchange', fromHash);
  var fromUrl = fromHash();
  runs.forEach(function (r) {
    if (!fromUrl && r.best >= 0) r.select(r.best, false);
  });

  /* Tables that sort by a column when its header is clicked (a bench's
   * tasks): numbers by their data-v, text by its content; a second click
   * reverses. */
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var body = table.tBodies[0];
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add('sorter');
      th.addEventListener('click', function () {
        var dir = th.getAttribute('data-dir') === 'asc' ? 'desc' : 'asc';
        Array.prototype.forEach.call(heads, function (h) {
          h.removeAttribute('data-dir');
        });
        th.setAttribute('data-dir', dir);
        var rows = Array.prototype.slice.call(body.rows);
        function key(r) {
          var c = r.cells[col];
          var v = c && c.getAttribute('data-v');
          return v !== null && v !== undefined && v !== '' && !isNaN(+v) ? +v : c ? c.textContent : '';
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return dir === 'asc' ? c : -c;
        });
        rows.forEach(function (r) {
          body.appendChild(r);
        });
      });
    });
  });

  /* What a test (or a curious reader) can check: counts, errors, time. */
  var nNodes = document.querySelectorAll('svg.treesvg circle.n').length;
  var nPoints = document.querySelectorAll('svg circle.pt').length;
  void document.body.offsetHeight; /* lay the page out before reading the clock */
  var ms = performance.now();
  if (status) {
    status.setAttribute('data-nodes', String(nNodes));
    status.setAttribute('data-points', String(nPoints));
    status.setAttribute('data-tasks', String(document.querySelectorAll('table.tasks tbody tr').length));
    status.setAttribute('data-bars', String(document.querySelectorAll('svg.anbars rect.an-bar').length));
    status.setAttribute('data-cells', String(document.querySelectorAll('svg g.an-cell').length));
    status.setAttribute('data-render-ms', ms.toFixed(0));
    status.setAttribute('data-errors', String(errors.length));
    status.setAttribute('data-ready', '1');
    status.textContent = 'Drawn: ' + nNodes + ' nodes and ' + nPoints + ' points in ' + ms.toFixed(0) + ' ms.';
  }
  console.log('kevo-report: ready nodes=' + nNodes + ' points=' + nPoints + ' errors=' + errors.length + ' ms=' + ms.toFixed(0));
})();
