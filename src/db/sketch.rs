//! Distinct-visitor sketches for the analytics rollups: exact sets while small, then
//! HyperLogLog with 2^10 one-byte registers (standard error 1.04/√1024 ≈ 3.3 %).
//!
//! Our own ~100 lines rather than a crate because the bytes are stored in the database:
//! the hash and the layout must never change under us (docs/api.md "Analytics").
//!
//! - Each visitor id is hashed to 32 bits: the first 4 bytes of SHA-256 of the id.
//! - Sparse: the sorted distinct hashes, exact up to [`SPARSE_MAX`] of them.
//! - Dense: register `h >> 22` keeps the largest rank (leading zeros + 1) of the other 22
//!   bits; estimated with the linear-counting correction for small counts.
//! - Stored as one tag byte (0 sparse, 1 dense) and the hashes (u32 little-endian) or the
//!   1,024 registers. Merging is set union, or the register-wise maximum.

use sha2::{Digest, Sha256};

const P: u32 = 10;
const M: usize = 1 << P;
/// Sparse sets grow to this many hashes (the size of the dense form) before turning dense.
pub const SPARSE_MAX: usize = 256;

#[derive(Debug, Clone, PartialEq)]
pub enum Sketch {
    Sparse(Vec<u32>),
    Dense(Box<[u8; M]>),
}

impl Default for Sketch {
    fn default() -> Self {
        Sketch::Sparse(Vec::new())
    }
}

/// The 32-bit hash a visitor id counts as.
pub fn hash(visitor_id: &str) -> u32 {
    let d = Sha256::digest(visitor_id.as_bytes());
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

fn register(h: u32) -> (usize, u8) {
    let rest = h << P;
    let rank = if rest == 0 {
        32 - P + 1
    } else {
        rest.leading_zeros() + 1
    };
    ((h >> (32 - P)) as usize, rank as u8)
}

impl Sketch {
    pub fn insert(&mut self, h: u32) {
        match self {
            Sketch::Sparse(v) => {
                if let Err(at) = v.binary_search(&h) {
                    v.insert(at, h);
                    if v.len() > SPARSE_MAX {
                        self.densify();
                    }
                }
            }
            Sketch::Dense(r) => {
                let (i, rank) = register(h);
                r[i] = r[i].max(rank);
            }
        }
    }

    fn densify(&mut self) {
        if let Sketch::Sparse(v) = self {
            let mut r = Box::new([0u8; M]);
            for &h in v.iter() {
                let (i, rank) = register(h);
                r[i] = r[i].max(rank);
            }
            *self = Sketch::Dense(r);
        }
    }

    /// Adds every visitor `other` counts.
    pub fn merge(&mut self, other: &Sketch) {
        match (&mut *self, other) {
            (_, Sketch::Sparse(v)) => {
                if let Sketch::Sparse(mine) = self {
                    if mine.is_empty() {
                        mine.extend_from_slice(v);
                        return;
                    }
                }
                for &h in v {
                    self.insert(h);
                }
            }
            (Sketch::Dense(mine), Sketch::Dense(r)) => {
                for (a, b) in mine.iter_mut().zip(r.iter()) {
                    *a = (*a).max(*b);
                }
            }
            (Sketch::Sparse(_), Sketch::Dense(_)) => {
                self.densify();
                self.merge(other);
            }
        }
    }

    /// Distinct visitors: exact while sparse, else the HyperLogLog estimate.
    pub fn count(&self) -> u64 {
        match self {
            Sketch::Sparse(v) => v.len() as u64,
            Sketch::Dense(r) => {
                let m = M as f64;
                let zeros = r.iter().filter(|&&x| x == 0).count();
                let sum: f64 = r.iter().map(|&x| 2f64.powi(-(x as i32))).sum();
                let alpha = 0.7213 / (1.0 + 1.079 / m);
                let raw = alpha * m * m / sum;
                let est = if raw <= 2.5 * m && zeros > 0 {
                    m * (m / zeros as f64).ln()
                } else {
                    raw
                };
                est.round() as u64
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Sketch::Sparse(v) => {
                let mut out = Vec::with_capacity(1 + 4 * v.len());
                out.push(0);
                for h in v {
                    out.extend_from_slice(&h.to_le_bytes());
                }
                out
            }
            Sketch::Dense(r) => {
                let mut out = Vec::with_capacity(1 + M);
                out.push(1);
                out.extend_from_slice(&r[..]);
                out
            }
        }
    }

    /// A stored sketch; anything unreadable counts as empty rather than failing a read.
    pub fn from_bytes(b: &[u8]) -> Sketch {
        match b.split_first() {
            Some((0, rest)) if rest.len() % 4 == 0 => {
                let mut v: Vec<u32> = rest
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                v.sort_unstable();
                v.dedup();
                Sketch::Sparse(v)
            }
            Some((1, rest)) if rest.len() == M => {
                let mut r = Box::new([0u8; M]);
                r.copy_from_slice(rest);
                Sketch::Dense(r)
            }
            _ => Sketch::default(),
        }
    }

    /// Merges a stored sketch without building it first.
    pub fn merge_bytes(&mut self, b: &[u8]) {
        match b.split_first() {
            Some((0, rest)) if rest.len() % 4 == 0 => {
                for c in rest.chunks_exact(4) {
                    self.insert(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                }
            }
            _ => self.merge(&Sketch::from_bytes(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(range: std::ops::Range<u32>) -> Sketch {
        let mut s = Sketch::default();
        for i in range {
            s.insert(hash(&format!("visitor-{i}")));
        }
        s
    }

    #[test]
    fn exact_while_small() {
        let s = of(0..SPARSE_MAX as u32);
        assert!(matches!(s, Sketch::Sparse(_)));
        assert_eq!(s.count(), SPARSE_MAX as u64);
        let mut again = s.clone();
        again.merge(&of(0..10));
        assert_eq!(again.count(), SPARSE_MAX as u64, "a union counts each once");
    }

    #[test]
    fn estimates_within_three_standard_errors() {
        for n in [300u32, 1_000, 10_000, 100_000, 1_000_000] {
            let got = of(0..n).count() as f64;
            let err = (got - n as f64).abs() / n as f64;
            assert!(err < 3.0 * 0.0325, "{n} counted as {got}");
        }
    }

    #[test]
    fn merge_is_a_union_in_any_form() {
        let (a, b) = (of(0..5_000), of(2_500..7_500));
        let mut ab = a.clone();
        ab.merge(&b);
        let whole = of(0..7_500);
        assert_eq!(
            ab, whole,
            "merging dense sketches equals sketching the union"
        );
        let mut small = of(0..100);
        small.merge(&of(50..5_000));
        assert_eq!(small, of(0..5_000), "sparse into dense");
        let mut sparse = of(0..200);
        sparse.merge(&of(150..300));
        assert_eq!(sparse, of(0..300), "two sparse sets past the limit");
    }

    #[test]
    fn bytes_round_trip() {
        for s in [Sketch::default(), of(0..40), of(0..20_000)] {
            let b = s.to_bytes();
            assert_eq!(Sketch::from_bytes(&b), s);
            let mut m = Sketch::default();
            m.merge_bytes(&b);
            assert_eq!(m.count(), s.count());
        }
        assert_eq!(Sketch::from_bytes(b"junk").count(), 0);
        assert_eq!(Sketch::from_bytes(&[]).count(), 0);
    }
}
