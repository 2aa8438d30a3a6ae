//! Generates HttpArena's `benchmark.BenchmarkService` (proto/benchmark.proto, copied from
//! HttpArena's requests/benchmark.proto) with tonic-prost-build and the protoc of
//! `protoc-bin-vendored` (no system protoc needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A protoc the user set wins; otherwise the vendored one.
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_prost_build::configure()
        // tonic's `transport` is off: no `connect` constructor on the client.
        .build_transport(false)
        .build_client(false)
        .compile_protos(&["proto/benchmark.proto"], &["proto"])?;
    Ok(())
}
