//! How a plan holding relanon's operator crosses the wire: the scheduler and every executor
//! decode it with this codec, compiled into `relanon cluster scheduler` and `relanon cluster
//! executor`. A plain Ballista process does not know the operator and refuses the plan.
//!
//! The first byte says whose node follows: relanon's operator or any other (Ballista's own
//! codec, which falls back to DataFusion's). relanon's operator carries the version of the
//! relanon that encoded it (its length in a byte, then its text) before its encoded job, so
//! the first process that decodes it, the scheduler, refuses a plan of another version
//! naming both, before any executor runs a task.

use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use super::super::wire::VERSION;
use super::exec::ShardExec;

const OURS: u8 = b'R';
const THEIRS: u8 = b'B';

/// Ballista's codec with relanon's operator.
#[derive(Debug, Default)]
pub struct RelanonCodec {
    inner: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for RelanonCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match buf.split_first() {
            Some((&OURS, tagged)) => match inputs {
                [input] => Ok(Arc::new(ShardExec::new(
                    Arc::new(untagged(tagged)?.to_vec()),
                    Arc::clone(input),
                ))),
                _ => Err(DataFusionError::Internal(format!(
                    "relanon's shard operator has one input, not {}",
                    inputs.len()
                ))),
            },
            Some((&THEIRS, rest)) => self.inner.try_decode(rest, inputs, ctx, proto_converter),
            _ => Err(DataFusionError::Internal(
                "a plan node this build of relanon did not encode: run one version of relanon on the client, the scheduler and every executor".to_string(),
            )),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        match node.downcast_ref::<ShardExec>() {
            Some(shard) => {
                buf.push(OURS);
                buf.push(VERSION.len() as u8);
                buf.extend_from_slice(VERSION.as_bytes());
                buf.extend_from_slice(shard.job());
                Ok(())
            }
            None => {
                buf.push(THEIRS);
                self.inner.try_encode(node, buf, proto_converter)
            }
        }
    }
}

/// The job of a relanon operator's bytes, once their version is this build's.
fn untagged(tagged: &[u8]) -> DfResult<&[u8]> {
    let refused = |theirs: &str| {
        DataFusionError::Plan(format!(
            "a shard's task comes from relanon {theirs} and this process is relanon {VERSION}: run one version of relanon on the client, the scheduler and every executor"
        ))
    };
    let (&len, rest) = tagged
        .split_first()
        .ok_or_else(|| refused("of an unknown version"))?;
    let len = usize::from(len);
    let theirs = rest
        .get(..len)
        .and_then(|v| std::str::from_utf8(v).ok())
        .ok_or_else(|| refused("of an unknown version"))?;
    if theirs != VERSION {
        return Err(refused(theirs));
    }
    Ok(&rest[len..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(version: &str, job: &[u8]) -> Vec<u8> {
        let mut out = vec![version.len() as u8];
        out.extend_from_slice(version.as_bytes());
        out.extend_from_slice(job);
        out
    }

    #[test]
    fn an_operator_of_another_version_is_refused_naming_both() {
        assert_eq!(untagged(&tagged(VERSION, b"job")).expect("ours"), b"job");
        let err = untagged(&tagged("0.0.0-other", b"job")).expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("0.0.0-other") && text.contains(VERSION),
            "{text}"
        );
        // An operator from before the tag: no version where one belongs.
        assert!(untagged(b"\xa0job").is_err());
        assert!(untagged(&[]).is_err());
    }
}
