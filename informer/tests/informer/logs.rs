//! Captures the `tracing` output of the current thread (tests run on a current-thread runtime).

use std::io::Write;
use std::sync::Arc;

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

/// Logs captured until dropped.
pub(crate) struct Captured {
    buffer: Buffer,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Captured {
    pub(crate) fn contents(&self) -> String {
        String::from_utf8_lossy(&self.buffer.0.lock()).into_owned()
    }
}

/// Starts capturing this thread's logs.
pub(crate) fn capture() -> Captured {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    Captured {
        buffer,
        _guard: tracing::subscriber::set_default(subscriber),
    }
}
