//! Captures `tracing` output (warnings and errors) of the whole test binary into one buffer.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static BUFFER: OnceLock<Buffer> = OnceLock::new();

/// Installs the capturing subscriber as the global default (once per test binary).
pub(crate) fn capture() {
    BUFFER.get_or_init(|| {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        buffer
    });
}

/// The captured lines containing `needle`.
pub(crate) fn lines_with(needle: &str) -> Vec<String> {
    let Some(buffer) = BUFFER.get() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&buffer.0.lock())
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}
