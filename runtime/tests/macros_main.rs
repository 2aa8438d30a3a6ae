//! Integration tests of the `#[runtime::main]` and `#[runtime::test]`
//! attributes: each test below is itself expanded by one of them.

use std::time::Duration;

#[runtime::test]
async fn test_awaits_nop() {
    runtime::ext::raw::nop().await.unwrap();
}

#[runtime::test(entries = 8)]
async fn test_with_entries() {
    // More operations than the submission queue has entries, one by one.
    for _ in 0..32 {
        runtime::ext::raw::nop().await.unwrap();
    }
}

#[runtime::test]
async fn test_returns_io_result() -> std::io::Result<()> {
    runtime::ext::raw::nop().await?;
    let n: u32 = "42"
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    assert_eq!(n, 42);
    Ok(())
}

#[runtime::test]
async fn test_returns_boxed_error() -> Result<(), Box<dyn std::error::Error>> {
    // `?` converts two different error types into the declared one.
    runtime::ext::raw::nop().await?;
    let n: u32 = "7".parse()?;
    assert_eq!(n, 7);
    Ok(())
}

#[runtime::test(crate = "runtime")]
async fn test_with_crate_path() {
    runtime::ext::raw::nop().await.unwrap();
}

#[runtime::test(crate = "::runtime", entries = 1)]
async fn test_with_all_arguments() {
    runtime::ext::raw::nop().await.unwrap();
}

#[runtime::test]
async fn test_spawn_local_and_sleep() {
    let handle = runtime::spawn_local(async {
        runtime::sleep(Duration::from_millis(1)).await;
        5
    });
    assert_eq!(handle.await.unwrap(), 5);
}

#[runtime::test]
#[should_panic(expected = "boom")]
async fn test_keeps_other_attributes() {
    runtime::ext::raw::nop().await.unwrap();
    panic!("boom");
}

#[runtime::test]
async fn test_with_inner_attribute() {
    #![allow(unused_variables)]
    let unused = runtime::ext::raw::nop().await;
}

#[test]
fn main_attribute_on_nested_fn() {
    #[runtime::main]
    async fn app() -> u32 {
        runtime::ext::raw::nop().await.unwrap();
        7
    }
    assert_eq!(app(), 7);
    // Each call builds and runs its own runtime.
    assert_eq!(app(), 7);
}

#[test]
fn main_attribute_with_arguments_and_result() {
    #[runtime::main(entries = 16)]
    async fn add(a: u32, b: u32) -> std::io::Result<u32> {
        runtime::ext::raw::nop().await?;
        Ok(a + b)
    }
    assert_eq!(add(2, 3).unwrap(), 5);
}

#[test]
fn main_attribute_keeps_visibility_and_moves_arguments() {
    mod inner {
        #[runtime::main]
        pub async fn concat(mut s: String, tail: String) -> String {
            runtime::ext::raw::nop().await.unwrap();
            s.push_str(&tail);
            s
        }
    }
    assert_eq!(inner::concat("ab".into(), "cd".into()), "abcd");
}

#[test]
fn main_attribute_unit_return() {
    #[runtime::main(crate = "runtime")]
    async fn run(flag: &std::cell::Cell<bool>) {
        runtime::ext::raw::nop().await.unwrap();
        flag.set(true);
    }
    let flag = std::cell::Cell::new(false);
    run(&flag);
    assert!(flag.get());
}

#[runtime::test(cores = 2)]
async fn test_with_two_cores() {
    assert_eq!(runtime::current_core(), Some(0));
    let on = runtime::spawn_on(1, async { runtime::current_core() });
    assert_eq!(on.await.unwrap(), Some(1));
}
