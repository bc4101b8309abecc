//! The inline records a CompiledMethodLoad event passes in `compile_info`
//! (the JDK's `include/jvmticmlr.h`), and reading them into an inlining
//! tree.
//!
//! `jvmticmlr.h` is not part of the generated bindings (`jvmti_sys.rs`
//! covers `jvmti.h` and `jni.h`); its three structs are declared here as
//! the header declares them, with compile-time checks of their size and
//! field offsets on x86-64 (the values bindgen's layout tests would
//! assert). The header is at version 1.0 in every JDK from 8 to 25.
//!
//! The records live only during the callback (HotSpot allocates them in
//! the posting thread's resource area): everything is copied out before it
//! returns. Every count and pointer is checked before it is followed.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

use pcct_jit::tree::{ChainError, TreeBuilder};

use crate::jvmti_sys::{jint, jmethodID};

/// `jvmtiCMLRKind`'s inline-information record.
const JVMTI_CMLR_INLINE_INFO: u32 = 2;

/// `jvmtiCompiledMethodLoadRecordHeader`.
#[repr(C)]
#[allow(non_snake_case)]
pub struct RecordHeader {
    pub kind: u32,
    pub majorinfoversion: jint,
    pub minorinfoversion: jint,
    pub next: *const RecordHeader,
}

/// `PCStackInfo`: the methods on the compile-time stack at one code
/// position, innermost first, each with its bytecode index.
#[repr(C)]
pub struct PCStackInfo {
    pub pc: *const c_void,
    pub numstackframes: jint,
    pub methods: *const jmethodID,
    pub bcis: *const jint,
}

/// `jvmtiCompiledMethodLoadInlineRecord`.
#[repr(C)]
pub struct InlineRecord {
    pub header: RecordHeader,
    pub numpcs: jint,
    pub pcinfo: *const PCStackInfo,
}

const _: () = {
    assert!(size_of::<RecordHeader>() == 24);
    assert!(offset_of!(RecordHeader, kind) == 0);
    assert!(offset_of!(RecordHeader, majorinfoversion) == 4);
    assert!(offset_of!(RecordHeader, minorinfoversion) == 8);
    assert!(offset_of!(RecordHeader, next) == 16);
    assert!(size_of::<PCStackInfo>() == 32);
    assert!(offset_of!(PCStackInfo, pc) == 0);
    assert!(offset_of!(PCStackInfo, numstackframes) == 8);
    assert!(offset_of!(PCStackInfo, methods) == 16);
    assert!(offset_of!(PCStackInfo, bcis) == 24);
    assert!(size_of::<InlineRecord>() == 40);
    assert!(offset_of!(InlineRecord, numpcs) == 24);
    assert!(offset_of!(InlineRecord, pcinfo) == 32);
};

/// Most records followed in one `compile_info` chain.
const MAX_RECORDS: usize = 16;
/// Most code positions believed in one record.
const MAX_PCS: usize = 1 << 22;
/// Most scopes believed at one position (HotSpot's inlining depth is at
/// most `MaxInlineLevel`, 15 by default, plus recursive inlining).
const MAX_SCOPES: usize = 1024;

/// Why a record could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// No inline-information record in the chain.
    NoRecord,
    /// A count out of bounds or a null array.
    Bad,
    /// A chain of scopes not rooted at the compiled method.
    Chain(ChainError),
}

/// Adds every code position's chain of scopes in `compile_info` to
/// `builder` (whose root is the compiled method). Returns the positions read.
///
/// # Safety
/// `compile_info` is the pointer the VM passed to the CompiledMethodLoad
/// callback that is running now (or null).
pub unsafe fn read_inline_record(compile_info: *const c_void, builder: &mut TreeBuilder) -> Result<usize, Malformed> {
    let mut header = compile_info as *const RecordHeader;
    for _ in 0..MAX_RECORDS {
        if header.is_null() {
            break;
        }
        // SAFETY: a non-null record of the chain the VM passed, alive
        // during the callback; every record starts with this header.
        let current = unsafe { &*header };
        if current.kind == JVMTI_CMLR_INLINE_INFO {
            // SAFETY: records of this kind are jvmtiCompiledMethodLoadInlineRecord.
            return unsafe { read_positions(&*(header as *const InlineRecord), builder) };
        }
        header = current.next;
    }
    Err(Malformed::NoRecord)
}

/// # Safety
/// `record` is an inline record the VM passed to the running callback.
unsafe fn read_positions(record: &InlineRecord, builder: &mut TreeBuilder) -> Result<usize, Malformed> {
    let count = usize::try_from(record.numpcs).map_err(|_| Malformed::Bad)?;
    if count == 0 {
        return Ok(0);
    }
    if count > MAX_PCS || record.pcinfo.is_null() {
        return Err(Malformed::Bad);
    }
    // SAFETY: the VM wrote `numpcs` PCStackInfo entries at `pcinfo`.
    let positions = unsafe { std::slice::from_raw_parts(record.pcinfo, count) };
    let mut chain: Vec<(u64, i32)> = Vec::with_capacity(16);
    for position in positions {
        let depth = usize::try_from(position.numstackframes).map_err(|_| Malformed::Bad)?;
        if depth == 0 || depth > MAX_SCOPES || position.methods.is_null() || position.bcis.is_null() {
            return Err(Malformed::Bad);
        }
        // SAFETY: the VM wrote `numstackframes` method ids and bcis for this position.
        let (methods, bcis) = unsafe {
            (std::slice::from_raw_parts(position.methods, depth), std::slice::from_raw_parts(position.bcis, depth))
        };
        chain.clear();
        chain.extend(methods.iter().zip(bcis).map(|(&method, &bci)| (method as usize as u64, bci)));
        builder.add_chain(&chain).map_err(Malformed::Chain)?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as HotSpot builds one: two positions of method 0x100, one
    /// in 0x200 inlined at bci 7 of it.
    #[test]
    fn a_record_built_as_hotspot_builds_it_reads_into_a_tree() {
        let methods_a = [0x200usize as jmethodID, 0x100usize as jmethodID];
        let bcis_a: [jint; 2] = [3, 7];
        let methods_b = [0x100usize as jmethodID];
        let bcis_b: [jint; 1] = [12];
        let positions = [
            PCStackInfo { pc: std::ptr::null(), numstackframes: 2, methods: methods_a.as_ptr(), bcis: bcis_a.as_ptr() },
            PCStackInfo { pc: std::ptr::null(), numstackframes: 1, methods: methods_b.as_ptr(), bcis: bcis_b.as_ptr() },
        ];
        let dummy = RecordHeader { kind: 1, majorinfoversion: 1, minorinfoversion: 0, next: std::ptr::null() };
        let record = InlineRecord {
            header: RecordHeader {
                kind: JVMTI_CMLR_INLINE_INFO,
                majorinfoversion: 1,
                minorinfoversion: 0,
                next: &dummy,
            },
            numpcs: 2,
            pcinfo: positions.as_ptr(),
        };
        let first = RecordHeader { next: &record.header, ..dummy };
        let mut builder = TreeBuilder::new(0x100, 64);
        // SAFETY: the records above live until the end of the test.
        let read = unsafe { read_inline_record(&first as *const RecordHeader as *const c_void, &mut builder) };
        assert_eq!(read, Ok(2));
        let tree = builder.finish(|id| id as u32);
        assert!(tree.child(pcct_jit::tree::ROOT, 7, 0x200).is_some());

        let mut other = TreeBuilder::new(0x999, 64);
        // SAFETY: as above.
        let refused = unsafe { read_inline_record(&record as *const InlineRecord as *const c_void, &mut other) };
        assert_eq!(refused, Err(Malformed::Chain(ChainError::NotRooted)));
        // SAFETY: null and a chain without an inline record are refused.
        unsafe {
            assert_eq!(read_inline_record(std::ptr::null(), &mut other), Err(Malformed::NoRecord));
            assert_eq!(
                read_inline_record(&dummy as *const RecordHeader as *const c_void, &mut other),
                Err(Malformed::NoRecord)
            );
        }
    }
}
