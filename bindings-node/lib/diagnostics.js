'use strict';
// Every event on `node:diagnostics_channel`, channel `retryrs:event`, the message being
// the event object itself (what onEvent receives). Only while the channel has
// subscribers: Retrier.call reads `channel.hasSubscribers` once per call, and an
// unobserved call takes exactly the path it took before (no clock read, no engine
// crossing, no event built on the happy path).
const dc = require('node:diagnostics_channel');

const CHANNEL = 'retryrs:event';
const channel = dc.channel(CHANNEL);

function publish(event) {
  channel.publish(event);
}

// A retrier's options as seen by a call made while someone subscribes: its onEvent
// followed by a publish. Made once per retrier (options are frozen; weak, so they die
// with it) and kept, since a later subscriber must not pay for a rebuild.
const observed = new WeakMap();

function observedOptions(o) {
  let seen = observed.get(o);
  if (seen === undefined) {
    const listener = o.onEvent;
    const onEvent = listener === undefined
      ? publish
      : (event) => {
        // A throw from the retrier's own listener is still reported by the call (and
        // the subscribers still told).
        try {
          listener(event);
        } finally {
          channel.publish(event);
        }
      };
    // What lib/options.js derives for a retrier that has a listener: the full loop, the
    // engine told of a success, the clock read at the start (for elapsedMs).
    seen = Object.freeze({ ...o, onEvent, needsFullLoop: true, recordsSuccess: true, needsClock: true });
    observed.set(o, seen);
  }
  return seen;
}

module.exports = { CHANNEL, channel, observedOptions };
