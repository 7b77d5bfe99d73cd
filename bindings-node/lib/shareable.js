'use strict';
// What RetryBudget and CircuitBreaker share: each object stands for a native one (its
// handle), and is shareable with worker_threads: postMessage copies the object's one own
// field, its share id (`retryrsBudget`, `retryrsBreaker`), and `from` in the receiving
// thread attaches to the same native object (one addon per process).
const { rethrowProblem } = require('./problem');

/**
 * The handle bookkeeping of one class.
 * @param {Function} cls the JS class (its name starts every message)
 * @param {string} field the own field that carries the share id
 * @param {(id: number) => object} attachNative the native class's attach (throws when no
 *   thread holds that id any more)
 */
function shareable(cls, field, attachNative) {
  const handles = new WeakMap();
  // What a worker received (a plain { [field]: id }), attached once.
  const attached = new WeakMap();

  /** Makes `object` stand for `handle`, shared under `id`, and freezes it. */
  function adopt(object, handle, id = handle.share()) {
    handles.set(object, handle);
    // The one own, enumerable field: what structured clone carries to another thread.
    Object.defineProperty(object, field, { value: id, enumerable: true });
    Object.freeze(object);
  }

  /** A new object of the class around `handle` (made here or elsewhere: a policy document's). */
  function wrap(handle) {
    const object = Object.create(cls.prototype);
    adopt(object, handle);
    return object;
  }

  /**
   * `object` (a new one by default; a constructor passes `this`) around the handle `make`
   * returns, its problems thrown in Node's spelling with `prefix`.
   */
  function made(make, prefix, object = Object.create(cls.prototype)) {
    let handle;
    try {
      handle = make();
    } catch (err) {
      rethrowProblem(err, prefix);
    }
    adopt(object, handle);
    return object;
  }

  /** The object a worker received (an object of the class is returned as it is). */
  function from(received) {
    if (handles.has(received)) return received;
    const id = received !== null && typeof received === 'object' ? received[field] : undefined;
    if (!Number.isInteger(id)) {
      throw new TypeError(`${cls.name}.from: expected a ${cls.name} or what postMessage made of one ({ ${field}: id })`);
    }
    let object = attached.get(received);
    if (object === undefined) {
      let handle;
      try {
        handle = attachNative(id);
      } catch (err) {
        rethrowProblem(err, `${cls.name}.from: `);
      }
      object = Object.create(cls.prototype);
      adopt(object, handle, id);
      attached.set(received, object);
    }
    return object;
  }

  /** The native handle behind an object of the class (or one received from another thread), or undefined. */
  function handleOf(object) {
    const handle = handles.get(object);
    if (handle !== undefined) return handle;
    if (object !== null && typeof object === 'object' && Number.isInteger(object[field])) {
      return handles.get(from(object));
    }
    return undefined;
  }

  return { handles, adopt, wrap, made, from, handleOf };
}

module.exports = { shareable };
