//! This crate's diagnostics: with the `tracing` feature, `tracing` events (target
//! `corering_net`); without it, nothing is compiled in. The library never prints: what a
//! caller must act on is a returned error, what an operator may want to see is an event.

/// A warning event (target `corering_net`); nothing without the `tracing` feature (the
/// arguments are still type-checked, never evaluated).
macro_rules! net_warn {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::warn!(target: "corering_net", $($arg)*);
        #[cfg(not(feature = "tracing"))]
        if false {
            let _ = ::std::format_args!($($arg)*);
        }
    }};
}

pub(crate) use net_warn;
