//! [`EtcdStorage`]'s conditional writes, and how a write whose fate is unknown (the member
//! died or did not answer in time) is settled.
//!
//! Every write is a transaction comparing the key's `mod_revision` with the one read. An
//! update or delete (a `mod_revision` above 0) may be sent again after a failure in transit:
//! revisions never come back, so once one attempt applied etcd refuses the others, and when it
//! refuses, the key's history tells whether an earlier attempt applied: the key's first change
//! after the revision compared is ours exactly when it holds the bytes written. A create (comparing with 0, which a delete brings back) is sent
//! once; when its fate is unknown, a linearizable read of the key tells whether it applied. A
//! write whose outcome these do not prove is answered with an error, as the Kubernetes API
//! server answers a write etcd timed out.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp, TxnOpResponse};

use super::endpoints::Call;
use super::{EtcdStorage, backend, from_revision, kv};
use crate::object::Object;
use crate::storage::StorageError;

/// The state of a key whose `mod_revision` was not the one expected: its object and
/// `mod_revision` (0: absent).
pub(super) type Changed = (Option<Arc<Object>>, i64);

/// The error of a write whose outcome is unknown.
fn unknown(key: &[u8], err: impl std::fmt::Display) -> StorageError {
    StorageError::Backend(format!(
        "the outcome of the write of {:?} is unknown: {err}",
        String::from_utf8_lossy(key)
    ))
}

impl EtcdStorage {
    /// Runs a transaction: puts `value` (deletes the key when `None`) if `key`'s
    /// `mod_revision` is still `expected`; otherwise reads `key`. Returns the revision of the
    /// write, or the current state when it changed.
    pub(super) async fn write_if_unchanged(
        &self,
        key: &[u8],
        expected: i64,
        value: Option<Vec<u8>>,
    ) -> Result<Result<u64, Changed>, StorageError> {
        let op = match &value {
            Some(value) => TxnOp::put(key, value.clone(), None),
            None => TxnOp::delete(key, None),
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([op])
            .or_else([TxnOp::get(key, None)]);
        let call = if expected > 0 {
            Call::GuardedWrite
        } else {
            Call::Write
        };
        let sent = self
            .endpoints
            .send(call, |c| {
                let txn = txn.clone();
                async move { kv(&c).txn(txn).await }
            })
            .await;
        let response = match sent.result {
            Ok(response) => response,
            Err(err) if sent.uncertain => {
                return self.read_back(key, expected, value.as_deref(), err).await;
            }
            Err(err) => return Err(backend(err)),
        };
        let revision = self.saw_header(response.header());
        if response.succeeded() {
            return Ok(Ok(revision));
        }
        let current = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        });
        let found = current.as_ref().and_then(|get| get.kvs().first());
        if sent.uncertain {
            // An earlier attempt may have applied: the key's first change after `expected`
            // tells.
            let found = found.cloned();
            return self
                .settle(key, expected, value.as_deref(), found)
                .await?
                .ok_or_else(|| unknown(key, "etcd refused it when sent again"));
        }
        match found {
            Some(found) => Ok(Err((
                Some(Arc::new(Self::decode(found)?)),
                found.mod_revision(),
            ))),
            None => Ok(Err((None, 0))),
        }
    }

    /// Settles a write that failed after it may have reached etcd, with a linearizable read of
    /// `key` and, if it changed since `expected`, its history ([`settle`](Self::settle));
    /// otherwise `err`, as the outcome is unknown (the write may still apply).
    async fn read_back(
        &self,
        key: &[u8],
        expected: i64,
        value: Option<&[u8]>,
        err: etcd_client::Error,
    ) -> Result<Result<u64, Changed>, StorageError> {
        let read = self
            .endpoints
            .call(Call::Read, |c| async move { kv(&c).get(key, None).await })
            .await;
        let Ok(response) = read else {
            return Err(unknown(key, err));
        };
        self.saw_header(response.header());
        let found = response.kvs().first().cloned();
        if found.as_ref().is_some_and(|f| f.mod_revision() == expected) {
            // Not applied yet; it may still apply.
            return Err(unknown(key, err));
        }
        self.settle(key, expected, value, found)
            .await?
            .ok_or_else(|| unknown(key, err))
    }

    /// Settles a write of `value` over `mod_revision` `expected` from the key's current state
    /// `found` (changed since `expected`). The write compared `expected`, so if it applied it
    /// was the key's first change after `expected`: the key's history (read back at the
    /// revisions before `found`'s) gives that change, which is ours when it holds our bytes;
    /// when it is another's, ours never applied and never will (its comparison cannot hold
    /// again), and the current state is answered as a conflict. `None`: not proven (a create or
    /// delete, a deleted key in between, compacted history).
    async fn settle(
        &self,
        key: &[u8],
        expected: i64,
        value: Option<&[u8]>,
        found: Option<KeyValue>,
    ) -> Result<Option<Result<u64, Changed>>, StorageError> {
        let (Some(value), Some(current)) = (value, found) else {
            return Ok(None);
        };
        if expected == 0 {
            return Ok(applied(Some(&current), expected, Some(value)).map(Ok));
        }
        let mut first = current.clone();
        for _ in 0..HISTORY_STEPS {
            let options = GetOptions::new().with_revision(first.mod_revision() - 1);
            let read = self
                .endpoints
                .call(Call::Read, |c| {
                    let options = options.clone();
                    async move { kv(&c).get(key, Some(options)).await }
                })
                .await;
            let Ok(response) = read else {
                return Ok(None);
            };
            match response.kvs().first() {
                Some(before) if before.mod_revision() > expected => first = before.clone(),
                Some(before) if before.mod_revision() == expected => {
                    if let Some(revision) = applied(Some(&first), expected, Some(value)) {
                        tracing::debug!(key = %String::from_utf8_lossy(key), revision, "an etcd write whose answer was lost had applied");
                        return Ok(Some(Ok(revision)));
                    }
                    let object = Arc::new(Self::decode(&current)?);
                    return Ok(Some(Err((Some(object), current.mod_revision()))));
                }
                _ => return Ok(None),
            }
        }
        Ok(None)
    }
}

/// How many earlier versions of a key are read back to find its first change after a write
/// whose outcome is unknown.
const HISTORY_STEPS: usize = 16;

/// The revision at which the write of `value` over `expected` applied, if `found` (the key's
/// current state) proves it did.
fn applied(found: Option<&KeyValue>, expected: i64, value: Option<&[u8]>) -> Option<u64> {
    let found = found?;
    let value = value?;
    (found.mod_revision() != expected && found.value() == value)
        .then(|| from_revision(found.mod_revision()))
}
