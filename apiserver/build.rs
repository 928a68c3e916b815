//! Compiles the vendored Kubernetes protobuf definitions (`proto/`) into a descriptor set, with
//! which the server decodes request bodies in Kubernetes' protobuf encoding.

use std::path::PathBuf;

const FILES: &[&str] = &[
    "api/core/v1/generated.proto",
    "api/apps/v1/generated.proto",
    "api/batch/v1/generated.proto",
    "api/coordination/v1/generated.proto",
    "api/networking/v1/generated.proto",
    "api/policy/v1/generated.proto",
    "api/scheduling/v1/generated.proto",
    "api/rbac/v1/generated.proto",
    "api/authentication/v1/generated.proto",
    "api/authorization/v1/generated.proto",
    "api/autoscaling/v1/generated.proto",
    "api/autoscaling/v2/generated.proto",
    "api/discovery/v1/generated.proto",
    "api/storage/v1/generated.proto",
    "api/certificates/v1/generated.proto",
    "api/flowcontrol/v1/generated.proto",
    "api/node/v1/generated.proto",
    "api/admissionregistration/v1/generated.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler.include_imports(true).include_source_info(false);
    compiler.open_files(FILES)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("kubernetes.fds");
    std::fs::write(out, compiler.encode_file_descriptor_set())?;
    Ok(())
}
