//! The `#[main]` and `#[test]` attributes, which run an `async fn` on a
//! fresh [`Runtime`](crate::Runtime).
//!
//! Both are implemented in the `corering-macros` crate and re-exported here,
//! so they are written `#[runtime::main]` and `#[runtime::test]`. Each one
//! turns an `async fn` into an ordinary function that builds a runtime with
//! [`Builder`](crate::Builder) and drives the function's body to completion
//! with [`Runtime::block_on`](crate::Runtime::block_on).

/// Runs `async fn main` on a fresh [`Runtime`](crate::Runtime).
///
/// The attribute removes `async` from the function and wraps its body in a
/// future that is driven to completion on a runtime built for the call.
/// The signature, return type, visibility and other attributes are kept,
/// so `main` may return anything `main` can return, such as
/// `std::io::Result<()>`, and `?` works in the body.
///
/// # Examples
///
/// ```no_run
/// #[runtime::main]
/// async fn main() {
///     runtime::yield_now().await;
///     runtime::sleep(std::time::Duration::from_millis(10)).await;
///     println!("hello from the ring");
/// }
/// ```
///
/// With arguments, and a fallible `main`:
///
/// ```no_run
/// #[runtime::main(entries = 1024)]
/// async fn main() -> std::io::Result<()> {
///     runtime::time::timeout(std::time::Duration::from_secs(1), runtime::yield_now()).await?;
///     let task = runtime::spawn_local(async { 6 * 7 });
///     assert_eq!(task.await.unwrap(), 42);
///     Ok(())
/// }
/// ```
///
/// The code above expands to roughly this:
///
/// ```no_run
/// fn main() -> std::io::Result<()> {
///     let body = async move {
///         runtime::time::timeout(std::time::Duration::from_secs(1), runtime::yield_now()).await?;
///         let task = runtime::spawn_local(async { 6 * 7 });
///         assert_eq!(task.await.unwrap(), 42);
///         Ok(())
///     };
///     return runtime::Builder::new()
///         .entries(1024)
///         .build()
///         .expect("failed to start the runtime")
///         .block_on(body);
/// }
/// ```
///
/// The attribute may also be put on a function other than `main`; that
/// function may then take arguments, and each call runs it on its own
/// runtime:
///
/// ```no_run
/// #[runtime::main]
/// async fn double(x: u32) -> u32 {
///     runtime::yield_now().await;
///     x * 2
/// }
///
/// fn main() {
///     assert_eq!(double(21), 42);
/// }
/// ```
///
/// # Arguments
///
/// | Argument         | Value                                      | Default    |
/// |------------------|--------------------------------------------|------------|
/// | `entries = N`    | integer literal: a power of two, 1 to 32768 | the builder's |
/// | `cores = N`      | integer literal, at least 1                 | 1             |
/// | `crate = "path"` | string literal holding a path              | `::runtime` |
///
/// - `entries` is passed to [`Builder::entries`](crate::Builder::entries):
///   the number of submission queue entries of the ring.
/// - `crate` is the path the expansion uses to reach this crate, for when
///   it is renamed or re-exported; inside this crate, use `crate = "crate"`.
///
/// - `cores` is passed to [`Builder::cores`](crate::Builder::cores): the
///   number of cores (one pinned thread and ring each; `main` runs on core 0).
///
/// Any other argument is an error.
///
/// # Errors
///
/// The function must be `async`:
///
/// ```compile_fail
/// #[runtime::main]
/// fn main() {}
/// ```
///
/// Arguments the attribute does not know are rejected, such as tokio's
/// `flavor`:
///
/// ```compile_fail
/// #[runtime::main(flavor = "multi_thread")]
/// async fn main() {}
/// ```
///
/// `entries` must be a power of two:
///
/// ```compile_fail
/// #[runtime::main(entries = 100)]
/// async fn main() {}
/// ```
///
/// and at most 32768:
///
/// ```compile_fail
/// #[runtime::main(entries = 65536)]
/// async fn main() {}
/// ```
///
/// `cores` may not be 0:
///
/// ```compile_fail
/// #[runtime::main(cores = 0)]
/// async fn main() {}
/// ```
///
/// `main` takes no arguments and has no generic parameters:
///
/// ```compile_fail
/// #[runtime::main]
/// async fn main(port: u16) {}
/// ```
///
/// # Panics
///
/// The generated function panics with "failed to start the runtime" if the
/// runtime cannot be built, for example when the kernel refuses to set up
/// an `io_uring` instance.
pub use corering_macros::main;

/// Runs an `async fn` test on a fresh [`Runtime`](crate::Runtime).
///
/// Expands like [`macro@main`] and adds the `#[test]` attribute, so the
/// function is collected by the test harness. Every test gets its own
/// runtime. The test takes no arguments and may return anything a `#[test]`
/// function may return, such as `std::io::Result<()>`.
///
/// # Examples
///
/// ```
/// #[runtime::test]
/// async fn yields() {
///     runtime::yield_now().await;
/// }
///
/// #[runtime::test(entries = 8)]
/// async fn fallible() -> std::io::Result<()> {
///     runtime::time::timeout(std::time::Duration::from_secs(1), runtime::yield_now()).await?;
///     Ok(())
/// }
/// # fn main() {}
/// ```
///
/// # Arguments
///
/// The same as for [`macro@main`]: `entries = N` and `crate = "path"`.
///
/// # Errors
///
/// `#[test]` is added by the attribute; writing it as well is an error:
///
/// ```compile_fail
/// #[runtime::test]
/// #[test]
/// async fn twice() {}
/// # fn main() {}
/// ```
///
/// The function must be `async`:
///
/// ```compile_fail
/// #[runtime::test]
/// fn not_async() {}
/// # fn main() {}
/// ```
///
/// Unknown arguments are rejected:
///
/// ```compile_fail
/// #[runtime::test(foo)]
/// async fn unknown() {}
/// # fn main() {}
/// ```
///
/// Tests take no arguments:
///
/// ```compile_fail
/// #[runtime::test]
/// async fn with_argument(x: u32) {}
/// # fn main() {}
/// ```
///
/// # Panics
///
/// The test panics with "failed to start the runtime" if the runtime
/// cannot be built.
pub use corering_macros::test;
