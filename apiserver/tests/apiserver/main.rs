//! Integration tests of kcache-apiserver over real HTTP.
