// The lizard dashboard: reads the REST API every two seconds and shows the
// cluster (#/: workers and their executors, the queue, the runs) or one run
// (#/runs/<id>: progress, timings, plots of its state scalars and iteration
// times, its fields as .npy, a cancel button).  Plain DOM, no libraries; the
// API is addressed relative to the page, so a proxy may serve it under a
// path prefix.
(function () {
  'use strict';

  var POLL_MS = 2000;
  var HIDDEN_POLL_MS = 10000;
  var MAX_RUNS_LISTED = 100;
  var MAX_PLOT_POINTS = 1500;
  var TOKEN_KEY = 'lizard.token';

  var token = '';
  try { token = window.localStorage.getItem(TOKEN_KEY) || ''; } catch (e) { token = ''; }
  var access = 'read';
  var viewer = { user: '', role: '' };  // who the token belongs to (GET /)
  var timer = null;
  var generation = 0;  // bumped when the view changes, so stale answers are dropped

  // ---- helpers --------------------------------------------------------------

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var a = attrs || {};
    Object.keys(a).forEach(function (k) {
      if (a[k] === undefined || a[k] === null || a[k] === false) return;
      if (k === 'text') node.textContent = String(a[k]);
      else if (k === 'class') node.className = a[k];
      else if (k === 'onclick') node.addEventListener('click', a[k]);
      else node.setAttribute(k, String(a[k]));
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }

  var SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = String(attrs[k]);
      else node.setAttribute(k, String(attrs[k]));
    });
    return node;
  }

  // Text for values and runs (format.js).
  var format = window.lizardFormat;
  var fmtBytes = format.fmtBytes;
  var fmtMs = format.fmtMs;
  var fmtNumber = format.fmtNumber;
  var fmtTime = format.fmtTime;
  var fmtCount = format.fmtCount;
  var elapsedMs = format.elapsedMs;
  var elapsedText = format.elapsedText;
  var iterationsText = format.iterationsText;
  var recoveryLine = format.recoveryLine;

  function relative(path) { return path.charAt(0) === '/' ? path.slice(1) : path; }

  function headers() {
    var h = { Accept: 'application/json' };
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  // Fetches an API path; resolves to its JSON, rejects with {status, message}.
  function api(path, method) {
    return fetch(relative(path), { method: method || 'GET', headers: headers(), cache: 'no-store' })
      .then(function (r) {
        return r.text().then(function (body) {
          var j = null;
          try { j = body ? JSON.parse(body) : null; } catch (e) { j = null; }
          if (!r.ok) {
            var msg = j && j.error ? j.error : 'HTTP ' + r.status;
            throw { status: r.status, message: msg };
          }
          return j;
        });
      });
  }

  function notice(text) {
    var n = document.getElementById('notice');
    n.textContent = text || '';
    n.hidden = !text;
  }

  function statusBadge(status) {
    return el('span', { class: 'badge status-' + status, text: status });
  }

  // A run's completion in [0, 1]: rows of a one-iteration run, else iterations.
  function fractionDone(run) {
    if (run.status === 'done') return 1;
    var p = run.progress;
    if (run.max_iterations === 1 && p && p.rows > 0) return p.rows_done / p.rows;
    if (run.max_iterations > 0) return Math.min(1, (run.iterations || 0) / run.max_iterations);
    return 0;
  }

  function progressBar(run) {
    var f = fractionDone(run);
    var label = run.max_iterations === 1 && run.progress
      ? fmtCount(run.progress.rows_done) + ' / ' + fmtCount(run.progress.rows) + ' rows'
      : fmtCount(run.iterations || 0) + ' / ' + fmtCount(run.max_iterations) + ' iterations';
    if (run.status === 'done' && run.iterations < run.max_iterations) label = iterationsText(run.iterations) + ' (ended before the cap of ' + run.max_iterations + ')';
    return el('div', { class: 'progress', title: label, 'data-fraction': f.toFixed(4) },
      el('div', { class: 'progress-fill status-' + run.status, style: 'width:' + (f * 100).toFixed(1) + '%' }),
      el('span', { class: 'progress-label', text: label }));
  }

  function meanIterationMs(run) {
    var ph = run.phases || {};
    if (typeof ph.iterations_ms === 'number' && run.iterations > 0) return ph.iterations_ms / run.iterations;
    // Running: its time so far, less planning and loading, over the iterations done.
    var elapsed = elapsedMs(run);
    if (run.status === 'running' && elapsed !== undefined && run.iterations > 0)
      return Math.max(0, elapsed - (ph.planning_ms || 0) - (ph.loading_ms || 0)) / run.iterations;
    return undefined;
  }

  function cancelButton(run, after) {
    if (access !== 'write' || (run.status !== 'queued' && run.status !== 'running')) return null;
    // A user cancels their own runs; an admin anyone's.
    if (viewer.role === 'user' && run.owner && run.owner !== viewer.user) return null;
    return el('button', {
      class: 'cancel', 'data-cancel': run.runtime_id, text: 'Cancel',
      onclick: function (ev) {
        ev.preventDefault();
        ev.target.disabled = true;
        api('runtimes/' + encodeURIComponent(run.runtime_id), 'DELETE')
          .then(function () { notice(''); after(); })
          .catch(function (e) { notice('Cancelling ' + run.runtime_id + ': ' + e.message); });
      }
    });
  }

  // ---- the overview (#/) ----------------------------------------------------

  function executorRow(e, index) {
    var total = e.total_memory || 0;
    var free = e.free_memory || 0;
    var used = total > 0 ? Math.max(0, Math.min(1, (total - free) / total)) : 0;
    return el('tr', { 'data-executor': index },
      el('td', { text: index }),
      el('td', { text: e.name || '–' }),
      el('td', { text: e.kind + (e.arch ? ' ' + e.arch : '') }),
      el('td', {},
        el('div', { class: 'meter', title: fmtBytes(total - free) + ' used' },
          el('div', { class: 'meter-fill', style: 'width:' + (used * 100).toFixed(1) + '%' })),
        el('span', { class: 'small', 'data-free-memory': free, text: fmtBytes(free) + ' free of ' + fmtBytes(total) })),
      el('td', {}, e.run ? el('a', { href: '#/runs/' + e.run, text: e.run }) : el('span', { class: 'muted', text: 'idle' })),
      el('td', { class: 'num', text: e.runs_served === undefined ? '–' : e.runs_served }));
  }

  function workerCard(w) {
    var hw = w.hardware || {};
    var executors = hw.executors || [];
    var programs = Object.keys(w.programs || {});
    var ready = programs.filter(function (h) { return w.programs[h] === 'ready'; }).length;
    return el('section', { class: 'card worker', 'data-worker': w.id },
      el('h3', {}, el('span', { class: 'worker-id', text: w.id }), ' ',
        el('span', { class: 'muted', text: (hw.hostname || '?') + ' · ' + (hw.backend || '?') + ' backend · ' + w.address })),
      hw.backend_note ? el('p', { class: 'small muted', text: hw.backend_note }) : null,
      el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, ['#', 'device', 'kind', 'memory', 'serving', 'runs served'].map(function (h) {
          return el('th', { text: h });
        }))),
        el('tbody', {}, executors.map(executorRow))),
      el('p', { class: 'small muted', text: 'joined ' + fmtTime(w.connected_at) + ' · ' + ready + ' of ' +
        programs.length + ' program(s) built' }));
  }

  function runRow(run, after) {
    var mean = meanIterationMs(run);
    return el('tr', { 'data-run': run.runtime_id, 'data-status': run.status },
      el('td', {}, el('a', { href: '#/runs/' + run.runtime_id, text: run.runtime_id })),
      el('td', { text: run.program_name || run.program.slice(0, 12) }),
      el('td', { 'data-owner': run.runtime_id, text: run.owner || '–' }),
      el('td', {}, statusBadge(run.status)),
      el('td', { class: 'wide' }, progressBar(run),
        run.error ? el('div', { class: 'error small', 'data-error': run.runtime_id, text: run.error }) : null),
      el('td', { class: 'small', text: fmtTime(run.created_at) }),
      el('td', { class: 'num', 'data-elapsed': run.runtime_id, text: elapsedText(run) }),
      el('td', { class: 'num', text: mean === undefined ? '–' : fmtMs(mean) }),
      el('td', {}, cancelButton(run, after)));
  }

  function runsTable(runs, after, empty) {
    if (!runs.length) return el('p', { class: 'muted', text: empty });
    return el('table', { class: 'grid runs' },
      el('thead', {}, el('tr', {}, ['run', 'program', 'owner', 'status', 'progress', 'created', 'elapsed', 'per iteration', ''].map(function (h) {
        return el('th', { text: h });
      }))),
      el('tbody', {}, runs.map(function (r) { return runRow(r, after); })));
  }

  function renderOverview(clients, runs, after) {
    var waiting = runs.filter(function (r) { return r.status === 'queued'; });
    var newest = runs.slice().reverse().slice(0, MAX_RUNS_LISTED);
    var executors = clients.reduce(function (n, w) { return n + ((w.hardware || {}).executors || []).length; }, 0);
    return [
      el('h2', {}, 'Workers ', el('span', { class: 'muted small', text: clients.length + ' connected, ' + executors + ' executor(s)' })),
      clients.length ? el('div', { class: 'workers' }, clients.map(workerCard))
        : el('p', { class: 'muted', text: 'No worker has joined. Start one with: lizard client -a HEAD -p PORT' }),
      el('h2', {}, 'Queue ', el('span', { class: 'muted small', text: waiting.length + ' waiting' })),
      el('div', { id: 'queue' }, runsTable(waiting, after, 'No run is waiting for executors.')),
      el('h2', {}, 'Runs ', el('span', { class: 'muted small', text: runs.length + ' in all' + (runs.length > MAX_RUNS_LISTED ? ', newest ' + MAX_RUNS_LISTED + ' shown' : '') })),
      el('div', { id: 'runs' }, runsTable(newest, after, 'No runs yet.'))
    ];
  }

  function loadOverview() {
    return Promise.all([api('clients'), api('runtimes')]).then(function (r) {
      return function (after) { return renderOverview(r[0] || [], r[1] || [], after); };
    });
  }

  // ---- one run (#/runs/<id>) -------------------------------------------------

  // Keeps at most MAX_PLOT_POINTS points, evenly spaced, and always the last.
  function thin(points) {
    if (points.length <= MAX_PLOT_POINTS) return points;
    var out = [];
    var step = points.length / MAX_PLOT_POINTS;
    for (var i = 0; i < MAX_PLOT_POINTS - 1; i++) out.push(points[Math.floor(i * step)]);
    out.push(points[points.length - 1]);
    return out;
  }

  // An SVG line chart of series [{name, points: [[x, y]...]}] sharing axes.
  function chart(title, unit, series) {
    var W = 640, H = 220, L = 64, R = 12, T = 12, B = 28;
    var all = [];
    series.forEach(function (s) { s.points = thin(s.points); all = all.concat(s.points); });
    var fig = el('figure', { class: 'chart', 'data-chart': title });
    fig.appendChild(el('figcaption', { text: title + (unit ? ' (' + unit + ')' : '') }));
    if (!all.length) { fig.appendChild(el('p', { class: 'muted', text: 'No iterations yet.' })); return fig; }
    var xs = all.map(function (p) { return p[0]; });
    var ys = all.map(function (p) { return p[1]; }).filter(function (v) { return isFinite(v); });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min(0, Math.min.apply(null, ys)), y1 = Math.max.apply(null, ys);
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) y1 = y0 + 1;
    var sx = function (x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    var sy = function (y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
    var g = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'plot', role: 'img', 'aria-label': title });
    g.appendChild(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }));
    g.appendChild(svg('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }));
    [y0, (y0 + y1) / 2, y1].forEach(function (v) {
      g.appendChild(svg('line', { x1: L, y1: sy(v), x2: W - R, y2: sy(v), class: 'gridline' }));
      g.appendChild(svg('text', { x: L - 6, y: sy(v) + 4, 'text-anchor': 'end', class: 'tick', text: fmtNumber(v) }));
    });
    [x0, x1].forEach(function (v) {
      g.appendChild(svg('text', { x: sx(v), y: H - 8, 'text-anchor': 'middle', class: 'tick', text: String(v) }));
    });
    g.appendChild(svg('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'tick', text: 'iteration' }));
    series.forEach(function (s, i) {
      var pts = s.points.filter(function (p) { return isFinite(p[1]); });
      g.appendChild(svg('polyline', {
        class: 'series series-' + i,
        points: pts.map(function (p) { return sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1); }).join(' '),
        'data-series': s.name,
        'data-iterations': s.points.map(function (p) { return p[0]; }).join(','),
        'data-values': s.points.map(function (p) { return p[1]; }).join(',')
      }));
    });
    fig.appendChild(g);
    fig.appendChild(el('div', { class: 'legend' }, series.map(function (s, i) {
      var last = s.points.length ? s.points[s.points.length - 1][1] : undefined;
      return el('span', { class: 'key key-' + i }, s.name + (last === undefined ? '' : ' = ' + fmtNumber(last)));
    })));
    return fig;
  }

  // The scalar state fields the record's timings carry, each as a series.
  function stateSeries(timings) {
    var names = [];
    timings.forEach(function (t) {
      Object.keys(t.state || {}).forEach(function (k) {
        if (typeof t.state[k] === 'number' && names.indexOf(k) < 0) names.push(k);
      });
    });
    return names.map(function (n) {
      return {
        name: n,
        points: timings.filter(function (t) { return t.state && typeof t.state[n] === 'number'; })
          .map(function (t) { return [t.iteration, t.state[n]]; })
      };
    });
  }

  function facts(rows) {
    return el('table', { class: 'facts' }, el('tbody', {}, rows.filter(function (r) { return r; }).map(function (r) {
      return el('tr', {}, el('th', { text: r[0] }), el('td', {}, r[1]));
    })));
  }

  function phaseText(ph) {
    var parts = [];
    ['queued_ms', 'planning_ms', 'loading_ms', 'compile_ms', 'iterations_ms'].forEach(function (k) {
      if (typeof ph[k] === 'number') parts.push(k.replace('_ms', '') + ' ' + fmtMs(ph[k]));
    });
    if (ph.compile_cache_hit !== undefined) parts.push(ph.compile_cache_hit ? 'compile cache hit' : 'compiled for this run');
    return parts.join(' · ') || '–';
  }

  function download(ev) {
    if (!token) return;  // a plain link does
    ev.preventDefault();
    var a = ev.currentTarget;
    fetch(a.getAttribute('href'), { headers: { Authorization: 'Bearer ' + token } })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.blob(); })
      .then(function (b) {
        var url = URL.createObjectURL(b);
        var tmp = el('a', { href: url, download: a.getAttribute('download') });
        document.body.appendChild(tmp);
        tmp.click();
        tmp.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
      })
      .catch(function (e) { notice('Download failed: ' + e.message); });
  }

  function fieldLinks(run) {
    var fields = run.fields || {};
    var names = Object.keys(fields);
    if (!names.length) return el('p', { class: 'muted', text: run.status === 'done' ? 'No fields.'
      : run.status === 'failed' || run.status === 'cancelled' ? 'A ' + run.status + ' run has no fields.'
      : 'Fields can be downloaded once the run is done.' });
    return el('ul', { class: 'fields' }, names.map(function (n) {
      return el('li', {}, el('a', { href: relative(fields[n]), download: n + '.npy', 'data-field': n, onclick: download, text: n + '.npy' }));
    }));
  }

  function planTable(run) {
    if (!run.plan) return null;
    var done = {};
    ((run.progress || {}).executors || []).forEach(function (e) { done[e.worker + '/' + e.executor] = e.rows_done; });
    return el('table', { class: 'grid' },
      el('thead', {}, el('tr', {}, ['worker', 'executor', 'first row', 'rows', 'weight', 'rows done (this iteration)'].map(function (h) { return el('th', { text: h }); }))),
      el('tbody', {}, run.plan.executors.map(function (e) {
        var d = done[e.worker + '/' + e.executor];
        return el('tr', {}, el('td', { text: e.worker }), el('td', { text: e.executor }), el('td', { class: 'num', text: e.first_row }),
          el('td', { class: 'num', text: e.rows }), el('td', { class: 'num', text: e.weight }), el('td', { class: 'num', text: d === undefined ? '–' : d }));
      })));
  }

  // The executors a run holds, or once it let them go, those of its plan.
  function executorList(run) {
    var list = run.executors || (run.plan ? run.plan.executors : []);
    var text = list.map(function (e) { return e.worker + '/' + e.executor; }).join(', ') || '–';
    return run.executors ? text : text + (list.length ? ' (released)' : '');
  }

  function recoveryList(run) {
    if (!run.recoveries || !run.recoveries.length) return null;
    return el('div', { id: 'recoveries' }, el('h3', { text: 'Recoveries' }),
      el('ul', {}, run.recoveries.map(function (r, i) {
        return el('li', { 'data-recovery': i }, el('span', { text: recoveryLine(r) }),
          r.kind ? el('span', { class: 'muted', text: ' (' + r.reason + ')' }) : null);
      })));
  }

  function renderRun(run, after) {
    var timings = run.timings || [];
    var times = [
      { name: 'ms', points: timings.map(function (t) { return [t.iteration, t.ms]; }) },
      { name: 'kernel_ms', points: timings.map(function (t) { return [t.iteration, t.kernel_ms]; }) },
      { name: 'fold_ms', points: timings.map(function (t) { return [t.iteration, t.fold_ms]; }) }
    ];
    var mean = meanIterationMs(run);
    return el('div', { class: 'run', 'data-run': run.runtime_id, 'data-status': run.status },
      el('p', {}, el('a', { href: '#/', text: '← cluster' })),
      el('h2', {}, 'Run ' + run.runtime_id + ' ', el('span', { class: 'muted', text: run.program_name }), ' ', statusBadge(run.status), ' ', cancelButton(run, after)),
      progressBar(run),
      run.error ? el('p', { class: 'error', text: run.error }) : null,
      facts([
        ['program', el('code', { text: run.program })],
        ['rows', fmtCount(run.rows)],
        ['iterations', run.iterations + ' of at most ' + run.max_iterations],
        ['params', el('code', { text: JSON.stringify(run.params) })],
        ['executors', executorList(run)],
        ['created', fmtTime(run.created_at)],
        run.started_at ? ['started', fmtTime(run.started_at)] : null,
        run.finished_at ? ['finished', fmtTime(run.finished_at) + ' (' + elapsedText(run) + ')'] : null,
        !run.finished_at && run.started_at ? ['running for', fmtMs(elapsedMs(run))] : null,
        ['phases', phaseText(run.phases || {})],
        mean !== undefined ? ['per iteration', fmtMs(mean) + ' (mean)'] : null
      ]),
      recoveryList(run),
      el('div', { class: 'panels' },
        el('div', {}, el('h3', { text: 'State over iterations' }),
          stateSeries(timings).map(function (s) { return chart(s.name, '', [s]); }),
          timings.length && !stateSeries(timings).length ? el('p', { class: 'muted', text: 'The state has no scalar fields to plot.' }) : null),
        el('div', {}, el('h3', { text: 'Time per iteration' }), chart('time per iteration', 'ms', times))),
      el('h3', { text: 'Fields' }),
      fieldLinks(run),
      run.plan ? el('h3', { text: 'Plan' }) : null,
      planTable(run));
  }

  function loadRun(id) {
    return api('runtimes/' + encodeURIComponent(id)).then(function (run) {
      return function (after) { return renderRun(run, after); };
    });
  }

  // ---- polling and routing ---------------------------------------------------

  function currentLoader() {
    var m = /^#\/runs\/([^/]+)$/.exec(window.location.hash);
    return m ? function () { return loadRun(decodeURIComponent(m[1])); } : loadOverview;
  }

  function useRoot(root) {
    access = (root && root.access) || 'read';
    viewer = { user: (root && root.user) || '', role: (root && root.role) || '' };
    document.getElementById('version').textContent = root && root.version ? 'v' + root.version : '';
  }

  function loadAccess() {
    return api('').then(useRoot);
  }

  function show(content) {
    var view = document.getElementById('view');
    view.replaceChildren ? view.replaceChildren() : (view.innerHTML = '');
    append(view, content);
    document.getElementById('updated').textContent = 'updated ' + new Date().toISOString().slice(11, 19) + ' UTC';
  }

  // The server embeds what the overview needs in the page it serves, so the
  // first view is drawn before any request (the run page still fetches).
  function showFirstSnapshot() {
    var node = document.getElementById('first-snapshot');
    var snap = null;
    try { snap = node ? JSON.parse(node.textContent) : null; } catch (e) { snap = null; }
    if (!snap || currentLoader() !== loadOverview) return;
    useRoot(snap.root);
    show(renderOverview(snap.clients || [], snap.runtimes || [], refresh));
  }

  function refresh() {
    clearTimeout(timer);
    var mine = ++generation;
    var load = currentLoader();
    return loadAccess().then(load).then(function (render) {
      if (mine !== generation) return;
      show(render(refresh));
      notice('');
    }).catch(function (e) {
      if (mine !== generation) return;
      if (e && e.status === 401) notice('This server needs a token: enter it above. (' + e.message + ')');
      else notice('Cannot read the server: ' + (e && e.message ? e.message : e));
    }).then(function () {
      if (mine !== generation) return;
      timer = setTimeout(refresh, document.hidden ? HIDDEN_POLL_MS : POLL_MS);
    });
  }

  document.getElementById('token').value = token;
  document.getElementById('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    token = document.getElementById('token').value.trim();
    try { window.localStorage.setItem(TOKEN_KEY, token); } catch (e) { /* private mode */ }
    refresh();
  });
  window.addEventListener('hashchange', refresh);
  showFirstSnapshot();
  refresh();
})();
