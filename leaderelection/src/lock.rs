//! [`LeaseLock`]: a `coordination.k8s.io/v1` Lease read and written as a [`Record`], with
//! optimistic concurrency on its resourceVersion (client-go's `resourcelock.LeaseLock`).

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube_client::Api;
use kube_client::api::PostParams;

/// What a Lease says about its holder (client-go's `LeaderElectionRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// The holder's identity; empty when released.
    pub holder_identity: String,
    /// How long the holder's claim lasts after it was last seen renewing, in seconds.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the Lease.
    pub acquire_time: Option<MicroTime>,
    /// When the holder last renewed.
    pub renew_time: Option<MicroTime>,
    /// How many times the Lease changed hands.
    pub leader_transitions: i32,
}

impl Record {
    /// The record a Lease's spec holds.
    pub fn from_lease(lease: &Lease) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        Self {
            holder_identity: spec.holder_identity.unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time,
            renew_time: spec.renew_time,
            leader_transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    fn into_spec(self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time,
            renew_time: self.renew_time,
            lease_transitions: Some(self.leader_transitions),
            ..LeaseSpec::default()
        }
    }
}

/// One Lease, remembering the version last read or written so that an update fails with a
/// conflict (409) when someone else wrote in between.
#[derive(Debug)]
pub(crate) struct LeaseLock {
    api: Api<Lease>,
    name: String,
    lease: Option<Lease>,
}

impl LeaseLock {
    pub(crate) fn new(api: Api<Lease>, name: String) -> Self {
        Self {
            api,
            name,
            lease: None,
        }
    }

    /// The Lease's record, `None` when there is no Lease.
    pub(crate) async fn get(&mut self) -> Result<Option<Record>, LockError> {
        self.lease = self.api.get_opt(&self.name).await?;
        Ok(self.lease.as_ref().map(Record::from_lease))
    }

    /// Creates the Lease holding `record`.
    pub(crate) async fn create(&mut self, record: Record) -> Result<(), LockError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.into_spec()),
        };
        self.lease = Some(self.api.create(&PostParams::default(), &lease).await?);
        Ok(())
    }

    /// Replaces the Lease last read or written with one holding `record`: a conflict (409)
    /// when the Lease changed since.
    pub(crate) async fn update(&mut self, record: Record) -> Result<(), LockError> {
        let Some(last) = &self.lease else {
            return Err(LockError::NotInitialized);
        };
        let lease = Lease {
            metadata: last.metadata.clone(),
            spec: Some(record.into_spec()),
        };
        let written = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        self.lease = Some(written);
        Ok(())
    }
}

/// Why reading or writing the Lease failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The API request failed (a conflict when someone else wrote the Lease first).
    #[error("lease request failed")]
    Api(#[from] kube_client::Error),
    /// An update before the Lease was read or created.
    #[error("lease not initialized, call get or create first")]
    NotInitialized,
}
