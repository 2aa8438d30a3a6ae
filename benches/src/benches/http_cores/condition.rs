//! The conditions `bench http-cores` runs its rounds under, each its own table: the load
//! generator sharing the servers' CPUs (the default, "co-located client"), a CPU hog spinning
//! on the first server CPU (`--hog`), and a CPU quota of one CPU per server through the
//! cgroup `cpu` controller (`--quota`: cgroup v2's `cpu.max`, else v1's `cpu.cfs_quota_us`,
//! where one is writable), as a container limit gives.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The quota's period, and its run time per period: one CPU's worth.
const QUOTA_PERIOD_US: u64 = 100_000;

/// One condition of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// Nothing added: wrk shares the servers' CPUs where no third CPU is allowed.
    Colocated,
    /// A thread spinning on the first server CPU for the whole condition.
    Hog,
    /// Each server process in a cgroup of its own with one CPU's worth of run time.
    Quota,
}

impl Condition {
    /// The conditions asked for, the default first.
    pub fn chosen(hog: bool, quota: bool) -> Vec<Condition> {
        let mut out = vec![Condition::Colocated];
        if hog {
            out.push(Condition::Hog);
        }
        if quota {
            out.push(Condition::Quota);
        }
        out
    }

    /// Its name in the table's title.
    pub fn title(self, hog_cpu: usize) -> String {
        match self {
            Condition::Colocated => "co-located client".to_string(),
            Condition::Hog => format!("a CPU hog on CPU {hog_cpu}"),
            Condition::Quota => {
                "a CPU quota of one CPU per server (cgroup cpu controller)".to_string()
            }
        }
    }

    /// What the `--json` row names get after them (nothing for the default, so older
    /// files still compare).
    pub fn suffix(self) -> &'static str {
        match self {
            Condition::Colocated => "",
            Condition::Hog => " hog",
            Condition::Quota => " quota",
        }
    }

    /// Sets the condition up for the server processes `pids` (the hog on `hog_cpu`); what
    /// it holds undoes it when dropped. `Ok(None)`: not possible here (the reason printed).
    pub fn apply(self, hog_cpu: usize, pids: &[u32]) -> io::Result<Option<Applied>> {
        let mut applied = Applied {
            _hog: None,
            _quotas: Vec::new(),
        };
        match self {
            Condition::Colocated => {}
            Condition::Hog => applied._hog = Some(Hog::start(hog_cpu)?),
            Condition::Quota => match Quota::controller() {
                Some(ctl) => {
                    for &pid in pids {
                        applied._quotas.push(Quota::new(&ctl, pid)?);
                    }
                }
                None => {
                    println!(
                        "http-cores: quota skipped: no writable cgroup cpu controller \
                         (/sys/fs/cgroup with cpu.max, or /sys/fs/cgroup/cpu with cpu.cfs_quota_us)"
                    );
                    return Ok(None);
                }
            },
        }
        Ok(Some(applied))
    }
}

/// What a condition holds while its rounds run, undone when dropped.
pub struct Applied {
    /// The spinning thread, stopped on drop.
    _hog: Option<Hog>,
    /// The servers' cgroups, left on drop (a failure half-way leaves those made so far).
    _quotas: Vec<Quota>,
}

/// A thread spinning on one CPU until dropped.
pub struct Hog {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Hog {
    fn start(cpu: usize) -> io::Result<Hog> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("http-cores-hog".to_string())
            .spawn(move || {
                // Unpinned if pinning fails: still a hog, on some CPU.
                let _ = sysutil::pin_to(cpu);
                while !flag.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })?;
        Ok(Hog {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where the cgroup `cpu` controller can be written: the hierarchy's directory and its version.
pub struct Controller {
    dir: PathBuf,
    v2: bool,
}

/// One server process in a cgroup of its own with one CPU's worth of run time; moved back to
/// the hierarchy's root and the cgroup removed on drop.
pub struct Quota {
    ctl_root: PathBuf,
    dir: PathBuf,
    pid: u32,
}

impl Quota {
    /// The cgroup v2 hierarchy if it has the `cpu` controller (which this enables for its
    /// children, and leaves enabled), else v1's `cpu` hierarchy.
    fn controller() -> Option<Controller> {
        for dir in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let dir = Path::new(dir);
            let controllers =
                fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            if controllers.split_whitespace().any(|c| c == "cpu")
                // Children get the controller only once it is in the subtree's control.
                && fs::write(dir.join("cgroup.subtree_control"), "+cpu").is_ok()
            {
                return Some(Controller {
                    dir: dir.to_path_buf(),
                    v2: true,
                });
            }
        }
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        v1.join("cpu.cfs_quota_us").exists().then(|| Controller {
            dir: v1.to_path_buf(),
            v2: false,
        })
    }

    /// A cgroup for `pid` under `ctl`, limited to one CPU, with `pid` moved into it.
    fn new(ctl: &Controller, pid: u32) -> io::Result<Quota> {
        let dir = ctl
            .dir
            .join(format!("corering-http-cores-{}-{pid}", std::process::id()));
        let at = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("cgroup {}: {what}: {e}", dir.display()))
        };
        fs::create_dir(&dir).map_err(|e| at("mkdir", e))?;
        let quota = Quota {
            ctl_root: ctl.dir.clone(),
            dir: dir.clone(),
            pid,
        };
        if ctl.v2 {
            let max = format!("{QUOTA_PERIOD_US} {QUOTA_PERIOD_US}");
            fs::write(dir.join("cpu.max"), max).map_err(|e| at("cpu.max", e))?;
        } else {
            let period = QUOTA_PERIOD_US.to_string();
            fs::write(dir.join("cpu.cfs_period_us"), &period)
                .map_err(|e| at("cpu.cfs_period_us", e))?;
            fs::write(dir.join("cpu.cfs_quota_us"), &period)
                .map_err(|e| at("cpu.cfs_quota_us", e))?;
        }
        fs::write(dir.join("cgroup.procs"), pid.to_string()).map_err(|e| at("cgroup.procs", e))?;
        Ok(quota)
    }
}

impl Drop for Quota {
    fn drop(&mut self) {
        // Back to the root (a cgroup with a process in it cannot be removed); a process that
        // is gone already left it by itself.
        let _ = fs::write(self.ctl_root.join("cgroup.procs"), self.pid.to_string());
        let _ = fs::remove_dir(&self.dir);
    }
}
