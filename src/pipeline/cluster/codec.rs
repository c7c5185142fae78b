//! How a plan holding relanon's operator crosses the wire: the scheduler and every executor
//! decode it with this codec, compiled into `relanon cluster scheduler` and `relanon cluster
//! executor`. A plain Ballista process does not know the operator and refuses the plan.
//!
//! The first byte says whose node follows: relanon's operator (its encoded job as it is) or
//! any other (Ballista's own codec, which falls back to DataFusion's).

use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

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
            Some((&OURS, job)) => match inputs {
                [input] => Ok(Arc::new(ShardExec::new(
                    Arc::new(job.to_vec()),
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
