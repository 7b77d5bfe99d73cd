//! Independent runs spread over the machine's cores (two at most: the simulator's
//! machine has two), returned in the order given, so a table does not depend on which
//! thread ran which row.

/// Runs `jobs` on up to two threads (the simulator's machine has two cores), in order:
/// each job is deterministic, so the rows do not depend on which thread ran them.
pub fn run_all<T: Send>(jobs: Vec<Box<dyn FnOnce() -> T + Send + '_>>) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2);
    let slots: Vec<std::sync::Mutex<Option<T>>> = jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let queue = std::sync::Mutex::new(jobs.into_iter().enumerate());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let next = queue.lock().expect("no job panicked").next();
                let Some((i, job)) = next else { return };
                *slots[i].lock().expect("no job panicked") = Some(job());
            });
        }
    });
    slots.into_iter().map(|s| s.into_inner().expect("no job panicked").expect("every job ran")).collect()
}
