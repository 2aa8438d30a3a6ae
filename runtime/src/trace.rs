//! The runtime's own diagnostics: with the `tracing` feature, `tracing` events and spans
//! (warnings, the backend chosen, each task's span, op submissions and completions at trace
//! level); without it, nothing unless `RUNTIME_LOG` is set (then warnings and the start-up
//! line on stderr). The library never prints on its own: what a caller must act on is a
//! returned error.

/// A warning (memory kept rather than freed under the kernel, a core that panicked, a
/// blocking-pool thread that could not start): a `tracing` warn event (target `runtime`);
/// without the feature, a line on stderr only when `RUNTIME_LOG` is set.
macro_rules! rt_warn {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::warn!(target: "runtime", $($arg)*);
        #[cfg(not(feature = "tracing"))]
        if ::std::env::var_os("RUNTIME_LOG").is_some() {
            ::std::eprintln!("runtime: {}", ::std::format_args!($($arg)*));
        }
    }};
}

/// What `RUNTIME_LOG=1` prints at start: an info event (target `runtime`) with the feature,
/// whatever `RUNTIME_LOG` says; else a line on stderr when `RUNTIME_LOG` is set.
macro_rules! rt_info {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::info!(target: "runtime", $($arg)*);
        #[cfg(not(feature = "tracing"))]
        if ::std::env::var_os("RUNTIME_LOG").is_some() {
            ::std::eprintln!("runtime: {}", ::std::format_args!($($arg)*));
        }
    }};
}

/// A trace event (target `runtime::op`) for an op's SQE or CQE; nothing without the
/// feature.
macro_rules! rt_trace_op {
    ($what:literal, $($field:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::trace!(target: "runtime::op", $($field)*, $what);
    }};
}

pub(crate) use {rt_info, rt_trace_op, rt_warn};
