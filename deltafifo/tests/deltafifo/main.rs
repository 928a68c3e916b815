//! Integration tests of kcache-deltafifo, named after the behaviours in the reference.

mod common;
mod concurrency;
mod delta_fifo;
mod fifo;
mod hostile;
mod proptests;
mod real_fifo;
