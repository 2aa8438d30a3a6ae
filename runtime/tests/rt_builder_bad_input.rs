//! `Builder` input the kernel cannot honour: CPUs past `CPU_SETSIZE`, CPUs that do not
//! exist or that this process may not use. Each is an `InvalidInput` error naming the CPU
//! (never a panic or a hang), and a failed build leaves the calling thread's affinity as it
//! was.

use std::io;

use runtime::Builder;

/// The CPUs the calling thread may run on now.
fn thread_affinity() -> Vec<usize> {
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; 0 is this thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(r, 0, "sched_getaffinity: {}", io::Error::last_os_error());
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, inside `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Parses a kernel CPU list ("0-3,8,10-11").
fn cpu_list(s: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// The CPUs this machine could ever bring online.
fn possible_cpus() -> Vec<usize> {
    cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap())
}

/// Asserts `build` failed with `InvalidInput` and a message naming `cpu`.
fn assert_rejects(res: io::Result<runtime::Runtime>, cpu: usize) {
    let err = match res {
        Ok(_) => panic!("a runtime pinned to CPU {cpu} was built"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert!(
        err.to_string().contains(&format!("CPU {cpu}")),
        "the error names CPU {cpu}: {err}"
    );
}

#[test]
fn a_cpu_past_cpu_setsize_is_an_invalid_input_error() {
    let before = thread_affinity();
    for cpu in [5000, libc::CPU_SETSIZE as usize, usize::MAX] {
        assert_rejects(Builder::new().cpus([cpu]).build(), cpu);
    }
    assert_eq!(thread_affinity(), before);
}

#[test]
fn a_worker_cpu_past_cpu_setsize_is_an_invalid_input_error() {
    let before = thread_affinity();
    let first = before[0];
    assert_rejects(Builder::new().cores(2).cpus([first, 5000]).build(), 5000);
    // Core 0 (this thread) is never pinned when another core's CPU is out of range.
    assert_eq!(thread_affinity(), before);
}

#[test]
fn a_cpu_that_does_not_exist_is_an_invalid_input_error() {
    let possible = possible_cpus();
    let missing = (0..libc::CPU_SETSIZE as usize).find(|c| !possible.contains(c));
    // A machine with CPU_SETSIZE (1024) possible CPUs has no such number to try.
    if !runtime::ext::testing::require(
        "a CPU number below CPU_SETSIZE that does not exist",
        missing.is_some(),
    ) {
        return;
    }
    let missing = missing.unwrap();
    let before = thread_affinity();
    assert_rejects(Builder::new().cpus([missing]).build(), missing);
    assert_eq!(thread_affinity(), before);
    // As a worker's CPU: core 0 was pinned first, and is unpinned again when the build fails.
    assert_rejects(
        Builder::new().cores(2).cpus([before[0], missing]).build(),
        missing,
    );
    assert_eq!(
        thread_affinity(),
        before,
        "a failed build restores the calling thread's affinity"
    );
    // The builder still works with CPUs that exist.
    let rt = Builder::new()
        .cores(2)
        .cpus(before.clone())
        .build()
        .unwrap();
    rt.block_on(async { runtime::ext::raw::nop().await.unwrap() });
}

/// The CPUs of this process's cpuset (cgroup v1 or v2), if the kernel says.
fn cpuset_cpus() -> Option<Vec<usize>> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroups.lines() {
        let mut it = line.splitn(3, ':');
        let (_, controllers, path) = (it.next()?, it.next()?, it.next()?);
        let file = if controllers.split(',').any(|c| c == "cpuset") {
            format!("/sys/fs/cgroup/cpuset{path}/cpuset.effective_cpus")
        } else if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/cpuset.cpus.effective")
        } else {
            continue;
        };
        if let Ok(s) = std::fs::read_to_string(file) {
            return Some(cpu_list(&s));
        }
    }
    None
}

#[test]
fn a_cpu_this_process_may_not_use_is_an_invalid_input_error() {
    // A CPU that is online but outside the process's cpuset; the thread's own affinity mask
    // does not matter (the kernel lets a thread ask for any CPU of its cpuset).
    let online = cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    let allowed = cpuset_cpus();
    if !runtime::ext::testing::require("a readable cpuset (cgroup)", allowed.is_some()) {
        return;
    }
    let allowed = allowed.unwrap();
    let before = thread_affinity();
    match online.iter().find(|c| !allowed.contains(c)) {
        Some(&denied) => {
            assert_rejects(Builder::new().cpus([denied]).build(), denied);
            assert_eq!(thread_affinity(), before);
        }
        // A cpuset holding every online CPU (a host property, not a missing feature): the
        // other side of the same check, every one of them is accepted, whatever this
        // thread's own mask.
        None => {
            for &cpu in &online {
                let rt = Builder::new().cpus([cpu]).build().unwrap();
                rt.block_on(async { runtime::ext::raw::nop().await.unwrap() });
                drop(rt);
                assert_eq!(thread_affinity(), before);
            }
        }
    }
}

#[test]
fn dropping_a_pinned_runtime_gives_the_thread_its_cpus_back() {
    // On its own thread: the test changes that thread's affinity.
    std::thread::spawn(|| {
        let before = allowed();
        if !runtime::ext::testing::require("two CPUs in this thread's mask", before.len() >= 2) {
            return;
        }
        let rt = runtime::Builder::new().cores(2).build().unwrap();
        assert_eq!(
            allowed().len(),
            1,
            "core 0 is pinned while the runtime lives"
        );
        drop(rt);
        assert_eq!(allowed(), before, "the drop restores the thread's CPUs");
        // So a second multi-core runtime on this thread still spreads over two CPUs.
        let rt = runtime::Builder::new().cores(2).build().unwrap();
        let cpu = rt.block_on(async { runtime::spawn_on(1, async { current_cpu() }).await });
        assert_ne!(
            cpu.unwrap(),
            current_cpu(),
            "core 1 runs on another CPU than core 0"
        );
    })
    .join()
    .unwrap();
}

/// The CPUs the calling thread may run on.
fn allowed() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; 0 is this thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(r, 0);
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// The CPU this thread runs on now.
fn current_cpu() -> usize {
    // SAFETY: sched_getcpu takes no arguments.
    unsafe { libc::sched_getcpu() as usize }
}
