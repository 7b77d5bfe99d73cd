//! The Node helpers' own thin exports beyond `propagation.rs` (the core's, shared with
//! the other hosts): the upward rule's answer as the core spells it, and the outbound
//! headers in the shape the HTTP helpers' hot path takes them (a flat list, the mesh and
//! the request kind read once, when a helper is made, not on every attempt).

use napi_derive::napi;
use retryrs::propagation::{outbound_headers, Mesh, RequestKind, REFUSAL_PUSHBACK, REFUSAL_STATUS};

use crate::guard::guarded;
use crate::propagation::{duration, invalid};

/// A refusal: its status and its header.
#[napi(object)]
pub struct Refusal {
    pub status: u32,
    /// `[name, value]`: "don't retry".
    pub header: Vec<String>,
}

/// What a request that arrived with nothing left is answered with.
#[napi]
pub fn propagation_refusal() -> napi::Result<Refusal> {
    guarded(|| {
        Ok(Refusal {
            status: u32::from(REFUSAL_STATUS),
            header: vec![REFUSAL_PUSHBACK.0.to_string(), REFUSAL_PUSHBACK.1.to_string()],
        })
    })
}

const MESHES: [Mesh; 3] = [Mesh::None, Mesh::Envoy, Mesh::Linkerd];
const KINDS: [RequestKind; 3] = [RequestKind::Http, RequestKind::Grpc, RequestKind::Connect];

/// A helper's mesh and request kind (the core's spellings, checked by the core) as one
/// small number for `propagationOutboundFlat`.
#[napi]
pub fn propagation_outbound_mode(mesh: String, kind: String) -> napi::Result<u32> {
    guarded(|| {
        let mesh = Mesh::parse(&mesh).map_err(invalid)?;
        let kind = RequestKind::parse(&kind).map_err(invalid)?;
        let m = MESHES.iter().position(|x| *x == mesh).unwrap_or(0);
        let k = KINDS.iter().position(|x| *x == kind).unwrap_or(0);
        Ok((m * KINDS.len() + k) as u32)
    })
}

/// The core's headers for one attempt (`outbound_headers`), as a flat list
/// `[name, value, name, value, ...]`; `mode` from `propagationOutboundMode`; `leftMs` the
/// attempt's time left (null: unbounded). Empty: send nothing.
#[napi]
pub fn propagation_outbound_flat(
    left_ms: Option<f64>,
    attempt: u32,
    is_retry: bool,
    mode: u32,
) -> napi::Result<Vec<String>> {
    guarded(|| {
        let mode = mode as usize;
        let (mesh, kind) = (MESHES.get(mode / KINDS.len()), KINDS.get(mode % KINDS.len()));
        let (Some(&mesh), Some(&kind)) = (mesh, kind) else {
            return Err(invalid(format!("not an outbound mode: {mode} (a bug)")));
        };
        let left = left_ms.map(|l| duration("leftMs", l)).transpose()?;
        let mut flat = Vec::new();
        for (name, value) in outbound_headers(mesh, left, attempt, is_retry, kind) {
            flat.push(name.to_string());
            flat.push(value);
        }
        Ok(flat)
    })
}
