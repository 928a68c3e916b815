//! Measures the candidate encodings of the compact cache on the realistic fixture pod: bytes per
//! object, encode and decode time (decode into a k8s-openapi `Pod`).
//!
//! `cargo run --release -p kcache-store --features testing,compact --example encodings`

use std::hint::black_box;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kcache_store::testing::pod_at;

const OBJECTS: usize = 2_000;

struct Row {
    name: &'static str,
    bytes: usize,
    encode: Duration,
    decode: Duration,
}

fn measure(
    name: &'static str,
    pods: &[Pod],
    encode: impl Fn(&Pod) -> Vec<u8>,
    decode: impl Fn(&[u8]) -> Pod,
) -> Row {
    let start = Instant::now();
    let encoded: Vec<Vec<u8>> = pods.iter().map(&encode).collect();
    let encode_time = start.elapsed();
    let start = Instant::now();
    for bytes in &encoded {
        black_box(decode(bytes));
    }
    let decode_time = start.elapsed();
    let n = pods.len() as u32;
    assert_eq!(&decode(&encoded[7]), &pods[7], "{name} does not round-trip");
    Row {
        name,
        bytes: encoded.iter().map(Vec::len).sum::<usize>() / pods.len(),
        encode: encode_time / n,
        decode: decode_time / n,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pods: Vec<Pod> = (0..OBJECTS)
        .map(|i| pod_at(i, 100, 1000 + i as u64))
        .collect();
    let samples: Vec<Vec<u8>> = pods[..500]
        .iter()
        .map(serde_json::to_vec)
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let dict = zstd::dict::from_samples(&samples, 64 * 1024)?;
    println!(
        "dictionary: {} bytes, trained in {:?}",
        dict.len(),
        start.elapsed()
    );
    let mp_samples: Vec<Vec<u8>> = pods[..500]
        .iter()
        .map(rmp_serde::to_vec_named)
        .collect::<Result<_, _>>()?;
    let mp_dict = zstd::dict::from_samples(&mp_samples, 64 * 1024)?;
    let level = 3;
    let cdict = zstd::dict::EncoderDictionary::copy(&dict, level);
    let ddict = zstd::dict::DecoderDictionary::copy(&dict);
    let mp_cdict = zstd::dict::EncoderDictionary::copy(&mp_dict, level);
    let mp_ddict = zstd::dict::DecoderDictionary::copy(&mp_dict);
    let json = |p: &Pod| serde_json::to_vec(p).unwrap_or_default();
    let mp = |p: &Pod| rmp_serde::to_vec_named(p).unwrap_or_default();
    let unjson = |b: &[u8]| serde_json::from_slice::<Pod>(b).unwrap_or_default();
    let unmp = |b: &[u8]| rmp_serde::from_slice::<Pod>(b).unwrap_or_default();
    let zdict = |cd: &zstd::dict::EncoderDictionary<'static>, raw: Vec<u8>| {
        let mut c =
            zstd::bulk::Compressor::with_prepared_dictionary(cd).unwrap_or_else(|_| unreachable!());
        c.compress(&raw).unwrap_or_default()
    };
    let unzdict = |dd: &zstd::dict::DecoderDictionary<'static>, b: &[u8]| {
        let mut d = zstd::bulk::Decompressor::with_prepared_dictionary(dd)
            .unwrap_or_else(|_| unreachable!());
        d.decompress(b, 1 << 20).unwrap_or_default()
    };
    let rows = [
        measure("json", &pods, json, unjson),
        measure("messagepack", &pods, mp, unmp),
        measure(
            "cbor",
            &pods,
            |p| {
                let mut v = Vec::new();
                ciborium::into_writer(p, &mut v).unwrap_or_default();
                v
            },
            |b| ciborium::from_reader(b).unwrap_or_default(),
        ),
        measure(
            "json+zstd",
            &pods,
            |p| zstd::bulk::compress(&json(p), level).unwrap_or_default(),
            |b| unjson(&zstd::bulk::decompress(b, 1 << 20).unwrap_or_default()),
        ),
        measure(
            "json+zstd+dict",
            &pods,
            |p| zdict(&cdict, json(p)),
            |b| unjson(&unzdict(&ddict, b)),
        ),
        measure(
            "messagepack+zstd+dict",
            &pods,
            |p| zdict(&mp_cdict, mp(p)),
            |b| unmp(&unzdict(&mp_ddict, b)),
        ),
    ];
    println!("| encoding | bytes/object | encode | decode |");
    println!("|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {:?} | {:?} |",
            r.name, r.bytes, r.encode, r.decode
        );
    }
    Ok(())
}
