'use strict';
// One 'abort' listener per AbortSignal, however many calls share it: a signal shared by
// thousands of concurrent calls (one per request, one per shutdown) would otherwise
// collect thousands of listeners and Node's MaxListenersExceededWarning.

const watched = new WeakMap(); // signal -> { runs: Set, listener }

/** Calls run.onAbort() when signal aborts, until unwatch(signal, run). */
function watch(signal, run) {
  let entry = watched.get(signal);
  if (entry === undefined) {
    const runs = new Set();
    const listener = () => {
      watched.delete(signal);
      for (const r of [...runs]) r.onAbort();
      runs.clear();
    };
    entry = { runs, listener };
    watched.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  entry.runs.add(run);
}

/** Stops watching for run; the last one out removes the listener from the signal. */
function unwatch(signal, run) {
  const entry = watched.get(signal);
  if (entry === undefined) return;
  entry.runs.delete(run);
  if (entry.runs.size === 0) {
    watched.delete(signal);
    signal.removeEventListener('abort', entry.listener);
  }
}

module.exports = { watch, unwatch };
