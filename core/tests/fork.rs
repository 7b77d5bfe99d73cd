//! Forked workers of one parent must not retry in lockstep: a child made by fork() draws
//! fresh entropy for an unseeded policy before its first delay. Its own test binary, one
//! test, so no other test thread is running when the process forks.
#![cfg(unix)]

use std::io::{Read, Write};
use std::os::fd::FromRawFd;

use retryrs::backoff::Backoff;
use retryrs::Policy;

fn delays(policy: &Policy) -> Vec<u64> {
    // One call's delays after 8 failures; 1e9 ms ceilings make a collision by chance
    // impossible in practice.
    let mut b = Backoff::new();
    (1..=8).map(|n| b.next_delay_ms(policy, n)).collect()
}

#[test]
fn forked_children_draw_their_own_delays_seeded_ones_do_not() {
    let unseeded = Policy::builder().initial_delay_ms(1e9).multiplier(1.0).max_delay_ms(1e9).build().unwrap();
    let seeded =
        Policy::builder().initial_delay_ms(1e9).multiplier(1.0).max_delay_ms(1e9).seed(Some(9)).build().unwrap();
    // The parent has used its generator before forking, as a server would have.
    let parent = delays(&unseeded);
    let mut children = vec![];
    for _ in 0..4 {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let mut out = unsafe { std::fs::File::from_raw_fd(fds[1]) };
            let line = format!("{:?} {:?}\n", delays(&unseeded), delays(&seeded));
            let ok = out.write_all(line.as_bytes()).is_ok();
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        unsafe { libc::close(fds[1]) };
        let mut text = String::new();
        unsafe { std::fs::File::from_raw_fd(fds[0]) }.read_to_string(&mut text).unwrap();
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child failed: {status}");
        children.push(text);
    }
    let seeded_line = format!("{:?}", delays(&seeded));
    let mut lists = vec![format!("{parent:?}")];
    for child in &children {
        let (u, s) = child.trim_end().split_at(child.find("] [").expect("two lists") + 1);
        assert_eq!(s.trim(), seeded_line, "a seeded policy gives the same stream in every process");
        lists.push(u.to_owned());
    }
    for (i, a) in lists.iter().enumerate() {
        for b in &lists[i + 1..] {
            assert_ne!(a, b, "two processes drew the same unseeded delays: {lists:#?}");
        }
    }
}
