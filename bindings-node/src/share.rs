//! Engine objects other threads (worker_threads) may attach to, by share id: the retry
//! budget and the circuit breaker. The addon is loaded once per process, so a registry is
//! seen by every thread; it holds its objects weakly: one lives while some thread's JS
//! wrapper holds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub struct Registry<T> {
    map: Mutex<Option<HashMap<u32, Weak<T>>>>,
    /// Share ids are never reused, so a stale id cannot attach to another object.
    next: AtomicU32,
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
        Registry { map: Mutex::new(None), next: AtomicU32::new(1) }
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

    /// The object shared under `id`, if some thread still holds it.
    pub fn attach(&self, id: u32) -> Option<Arc<T>> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.as_ref().and_then(|m| m.get(&id)).and_then(Weak::upgrade)
    }
}
