//! An image check: the uploaded file against what was declared (size, hash, type) and
//! the image limits.

use apalis::prelude::BoxDynError;
use plinth_render::Budget;
use sha2::{Digest, Sha256};

use super::{AssetCheck, Env, Fetched, ImageFormat, ImageTask, Verdict};
use crate::pool::render_pool;
use crate::retry::JobError;

/// An image check: a rejected file is the check's verdict (the asset says why), not a
/// failure of the job; storage or database trouble is retried.
pub(super) async fn run(task: ImageTask, env: &Env) -> Result<(), BoxDynError> {
    let storage = |e: BoxDynError| JobError::retry("storage", e);
    let Some(asset) = env.load_asset(&task.asset_id).await.map_err(storage)? else {
        return Ok(());
    };
    if !asset.pending {
        return Ok(());
    }
    // Read at most the declared size (itself within the limit): anything larger is
    // refused on its size alone, before a byte of it is read (M7).
    let bound = asset.size.min(asset.max_size);
    let verdict = match env
        .get_object(&asset.object_key, bound)
        .await
        .map_err(storage)?
    {
        Fetched::Missing => Verdict::Rejected("no file was uploaded to the upload URL".into()),
        Fetched::TooLarge { size } => Verdict::Rejected(format!(
            "the file is {size} bytes but {} were declared",
            asset.size
        )),
        // Decoding is CPU work: off the async threads.
        Fetched::Bytes(bytes) => render_pool().run(move || judge(&asset, &bytes)).await?,
    };
    env.judge_asset(&task.asset_id, &verdict)
        .await
        .map_err(storage)?;
    Ok(())
}

fn judge(asset: &AssetCheck, bytes: &[u8]) -> Verdict {
    let len = bytes.len() as u64;
    if len > asset.max_size {
        return Verdict::Rejected(format!(
            "the file is {len} bytes; the limit is {} bytes",
            asset.max_size
        ));
    }
    if len != asset.size {
        return Verdict::Rejected(format!(
            "the file is {len} bytes but {} were declared",
            asset.size
        ));
    }
    let digest = hex::encode(Sha256::digest(bytes));
    if !digest.eq_ignore_ascii_case(&asset.sha256) {
        return Verdict::Rejected(format!(
            "sha256 mismatch: the file hashes to {digest}, {} was declared",
            asset.sha256
        ));
    }
    // Bounded by the image limits themselves (pixels, SVG structure and cost).
    match plinth_render::inspect_image(bytes, &Budget::unlimited()) {
        Err(reason) => Verdict::Rejected(reason.to_string()),
        Ok(info) if info.mime != asset.declared_type => Verdict::Rejected(format!(
            "declared {} but the file is {}",
            asset.declared_type, info.mime
        )),
        Ok(info) => match ImageFormat::parse(info.format) {
            Some(format) => Verdict::Ready {
                format,
                width: info.width,
                height: info.height,
            },
            None => Verdict::Rejected(format!("unsupported image format {}", info.format)),
        },
    }
}
