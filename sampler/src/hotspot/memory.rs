//! Where the frame walker's memory comes from: [`Memory`] is implemented by
//! [`VmMemory`] (the process itself, through the fault-safe reads of
//! [`super::safe_read`]) and, in tests, by `FakeMemory` (synthetic
//! stacks and structures at made-up addresses), so the walker is tested on
//! stacks whose every byte is known, garbage included.

/// Reads of possibly invalid memory: `None` when the address cannot be read.
/// Implementations must be async-signal-safe.
pub trait Memory {
    fn u64(&self, address: usize) -> Option<u64>;
    fn u32(&self, address: usize) -> Option<u32>;
    fn u16(&self, address: usize) -> Option<u16>;
    fn u8(&self, address: usize) -> Option<u8>;

    /// Asks for the memory at `address` to be brought into the processor's
    /// cache for a later read (a hint: it reads nothing and cannot fault).
    #[inline]
    fn prefetch(&self, _address: usize) {}

    /// A pointer-sized word.
    #[inline]
    fn word(&self, address: usize) -> Option<usize> {
        self.u64(address).map(|value| value as usize)
    }

    #[inline]
    fn i32(&self, address: usize) -> Option<i32> {
        self.u32(address).map(|value| value as i32)
    }
}

/// This process's memory, read with [`super::safe_read`].
#[derive(Clone, Copy, Debug, Default)]
pub struct VmMemory;

impl Memory for VmMemory {
    #[inline]
    fn prefetch(&self, address: usize) {
        super::cache::prefetch(address);
    }

    #[inline]
    fn u64(&self, address: usize) -> Option<u64> {
        super::safe_read::read_u64(address)
    }

    #[inline]
    fn u32(&self, address: usize) -> Option<u32> {
        super::safe_read::read_u32(address)
    }

    #[inline]
    fn u16(&self, address: usize) -> Option<u16> {
        super::safe_read::read_u16(address)
    }

    #[inline]
    fn u8(&self, address: usize) -> Option<u8> {
        super::safe_read::read_u8(address)
    }
}

/// Synthetic memory for tests: byte regions at chosen addresses; anything
/// else is unreadable.
#[cfg(test)]
#[derive(Clone, Debug, Default)]
pub struct FakeMemory {
    regions: Vec<(usize, Vec<u8>)>,
}

#[cfg(test)]
impl FakeMemory {
    /// Adds `size` zero bytes at `base`.
    pub fn map(&mut self, base: usize, size: usize) {
        self.regions.push((base, vec![0; size]));
    }

    fn locate(&self, address: usize, width: usize) -> Option<(usize, usize)> {
        self.regions.iter().enumerate().find_map(|(index, (base, bytes))| {
            let offset = address.checked_sub(*base)?;
            (offset + width <= bytes.len()).then_some((index, offset))
        })
    }

    /// Writes `bytes` at `address` (which must be mapped).
    pub fn write(&mut self, address: usize, bytes: &[u8]) {
        let (index, offset) = self.locate(address, bytes.len()).expect("write to mapped memory");
        self.regions[index].1[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    pub fn put_u64(&mut self, address: usize, value: u64) {
        self.write(address, &value.to_le_bytes());
    }

    pub fn put_u32(&mut self, address: usize, value: u32) {
        self.write(address, &value.to_le_bytes());
    }

    pub fn put_u16(&mut self, address: usize, value: u16) {
        self.write(address, &value.to_le_bytes());
    }

    pub fn put_u8(&mut self, address: usize, value: u8) {
        self.write(address, &[value]);
    }

    fn read<const N: usize>(&self, address: usize) -> Option<[u8; N]> {
        let (index, offset) = self.locate(address, N)?;
        self.regions[index].1[offset..offset + N].try_into().ok()
    }
}

#[cfg(test)]
impl Memory for FakeMemory {
    fn u64(&self, address: usize) -> Option<u64> {
        self.read::<8>(address).map(u64::from_le_bytes)
    }

    fn u32(&self, address: usize) -> Option<u32> {
        self.read::<4>(address).map(u32::from_le_bytes)
    }

    fn u16(&self, address: usize) -> Option<u16> {
        self.read::<2>(address).map(u16::from_le_bytes)
    }

    fn u8(&self, address: usize) -> Option<u8> {
        self.read::<1>(address).map(|[byte]| byte)
    }
}
