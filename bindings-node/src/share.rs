//! Engine objects other threads (worker_threads) may attach to, by share id: the retry
//! budget and the circuit breaker. The addon is loaded once per process, so a registry is
//! seen by every thread; it holds its objects weakly: one lives while some thread's JS
//! wrapper holds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub struct Registry<T> {
    /// The JS class's name, for the error of an id no thread holds any more.
    class: &'static str,
    map: Mutex<Option<HashMap<u32, Weak<T>>>>,
    /// Share ids are never reused, so a stale id cannot attach to another object.
    next: AtomicU32,
}

impl<T> Registry<T> {
    pub const fn new(class: &'static str) -> Self {
        Registry { class, map: Mutex::new(None), next: AtomicU32::new(1) }
    }

    /// Registers `object` for other threads and returns its share id.
    pub fn share(&self, object: &Arc<T>) -> u32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let map = map.get_or_insert_with(HashMap::new);
        // Objects no thread holds any more leave the map as new ones arrive.
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(id, Arc::downgrade(object));
        id
    }

    /// The object shared under `id`, or an error saying no thread holds it any more.
    pub fn attach(&self, id: u32) -> napi::Result<Arc<T>> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.as_ref().and_then(|m| m.get(&id)).and_then(Weak::upgrade).ok_or_else(|| {
            napi::Error::new(
                napi::Status::InvalidArg,
                format!("no {} is shared under id {id}: no thread holds it any more", self.class),
            )
        })
    }
}
