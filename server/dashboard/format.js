// The dashboard's text for values and runs: durations, sizes, counts, UTC
// times, a run's elapsed time (or its wait in the queue when it never
// started) and one line per recovery, in the words `lizard run` prints
// (src/cli/recovery_notes.cpp).  Pure functions of their arguments, loaded
// before app.js, which takes them from window.lizardFormat.
(function () {
  'use strict';

  function fmtBytes(n) {
    if (typeof n !== 'number') return '–';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
  }

  function fmtMs(ms) {
    if (typeof ms !== 'number') return '–';
    if (ms >= 60000) return (ms / 60000).toFixed(1) + ' min';
    if (ms >= 1000) return (ms / 1000).toFixed(2) + ' s';
    if (ms >= 10) return ms.toFixed(0) + ' ms';
    return ms.toFixed(3) + ' ms';
  }

  function fmtNumber(v) {
    if (typeof v !== 'number') return String(v);
    if (v === 0) return '0';
    var a = Math.abs(v);
    return a >= 1e5 || a < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(5)));
  }

  // Every time on the page is UTC, as the server's records give them.
  function fmtTime(iso) { return iso ? iso.replace('T', ' ').replace('Z', ' UTC') : '–'; }

  // 1234567 -> "1,234,567"
  function fmtCount(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '–'; }

  // A finished run's elapsed time; a running one's time since it started
  // (live); none for a run that ended before it started.
  function elapsedMs(run) {
    if (run.finished_at && !run.started_at) return undefined;
    if (typeof run.elapsed_ms === 'number') return run.elapsed_ms;
    if (run.status !== 'running' || !run.started_at) return undefined;
    var started = Date.parse(run.started_at);
    return isFinite(started) ? Math.max(0, Date.now() - started) : undefined;
  }

  // How long a run that ended before it started waited in the queue (its
  // record's phases.queued_ms, else from its times, to the second).
  function queuedMs(run) {
    if (!run.finished_at || run.started_at) return undefined;
    if (run.phases && typeof run.phases.queued_ms === 'number') return run.phases.queued_ms;
    var waited = Date.parse(run.finished_at) - Date.parse(run.created_at);
    return isFinite(waited) ? Math.max(0, waited) : undefined;
  }

  // "1.20 s", or "1.0 min in the queue" for a run that never started.
  function elapsedText(run) {
    var queued = queuedMs(run);
    return queued !== undefined ? fmtMs(queued) + ' in the queue' : fmtMs(elapsedMs(run));
  }

  // "1 iteration", "2 iterations".
  function iterationsText(n) {
    return n + (n === 1 ? ' iteration' : ' iterations');
  }

  // One line per recovery, as `lizard run` prints it (src/cli/recovery_notes.cpp):
  // "worker w2 lost at iteration 39: re-planned over 1 worker, resuming at 39".
  function recoveryLine(r) {
    var resumed = r.resumed_at_iteration || 0;
    var lost = r.lost_at_iteration === undefined ? -1 : r.lost_at_iteration;
    var goesOn = resumed === 0 && lost !== 0 ? 'starting over at iteration 0' : 'resuming at ' + resumed;
    var lostAt = r.gathering_outputs ? ' while its outputs were gathered'
      : r.lost_at_iteration !== undefined ? ' at iteration ' + r.lost_at_iteration : '';
    if (r.kind === 'worker_lost') {
      var who = (r.workers_lost || []).length ? (r.workers_lost.length === 1 ? 'worker ' : 'workers ') + r.workers_lost.join(', ') : 'a worker';
      var plan = r.workers ? 're-planned over ' + r.workers.length + (r.workers.length === 1 ? ' worker, ' : ' workers, ') : 're-planning, ';
      return who + ' lost' + lostAt + ': ' + plan + goesOn;
    }
    if (r.kind === 'server_restart') return 'server restarted' + lostAt + ': ' + goesOn;
    return 'recovered (' + (r.reason || 'no reason given') + '): resuming at ' + resumed;
  }

  window.lizardFormat = {
    fmtBytes: fmtBytes,
    fmtMs: fmtMs,
    fmtNumber: fmtNumber,
    fmtTime: fmtTime,
    fmtCount: fmtCount,
    elapsedMs: elapsedMs,
    elapsedText: elapsedText,
    iterationsText: iterationsText,
    recoveryLine: recoveryLine
  };
})();
