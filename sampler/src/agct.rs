//! HotSpot's `AsyncGetCallTrace`: its types, its result codes, and finding it.
//!
//! The layouts and codes are those of `forte.cpp` in JDK 17 and JDK 25
//! (the function is not in any public header).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcct::FrameKind;

/// `ASGCT_CallFrame`: one frame, written by AsyncGetCallTrace, with pcct's
/// frame kind in the padding after `lineno` (which AsyncGetCallTrace does
/// not write: the handler clears it for the frames that function wrote).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallFrame {
    /// Bytecode index for Java frames; -3 for native methods.
    pub lineno: i32,
    /// The [`FrameKind`] pcct's walker saw (`Unknown`, 0, from anyone else).
    pub kind: u8,
    /// The frame's jmethodID (may be null).
    pub method_id: *mut c_void,
}

// The kind lives in padding: the layout stays `ASGCT_CallFrame`'s.
const _: () = assert!(std::mem::size_of::<CallFrame>() == 16 && std::mem::offset_of!(CallFrame, method_id) == 8);

impl CallFrame {
    pub const EMPTY: CallFrame = CallFrame { lineno: 0, kind: 0, method_id: std::ptr::null_mut() };

    /// A frame of unknown kind.
    pub fn new(lineno: i32, method_id: *mut c_void) -> CallFrame {
        CallFrame { lineno, kind: FrameKind::Unknown as u8, method_id }
    }

    /// The frame as the sampler's raw (jmethodID, bci): with `kinds`, a
    /// known kind is packed into the bci ([`pack_kind`]).
    pub fn raw(&self, kinds: bool) -> (usize, i32) {
        let lineno = if kinds { pack_kind(self.lineno, FrameKind::from_u8(self.kind)) } else { self.lineno };
        (self.method_id as usize, lineno)
    }
}

/// Where [`pack_kind`] puts a kind in a raw bci.
const KIND_SHIFT: u32 = 24;
/// The bits of a packed bci that hold the bci (sign-extended on unpacking).
const BCI_BITS: i32 = (1 << KIND_SHIFT) - 1;

/// A bci with `kind` in bits 24-30 (a bci is below 65,536; -1 and -3 keep
/// their low 24 bits); unknown kinds leave the bci as it is, so raw frames
/// without kinds are what they always were.
pub fn pack_kind(bci: i32, kind: FrameKind) -> i32 {
    match kind {
        FrameKind::Unknown => bci,
        kind => (bci & BCI_BITS) | (i32::from(kind as u8) << KIND_SHIFT),
    }
}

/// The bci and kind [`pack_kind`] packed (a negative raw bci, such as a
/// native frame's, has no kind).
pub fn unpack_kind(raw: i32) -> (i32, FrameKind) {
    if raw < 0 || raw >> KIND_SHIFT == 0 {
        return (raw, FrameKind::Unknown);
    }
    // Sign-extends the 24-bit bci: -1 and -3 come back.
    let bci = (raw << (32 - KIND_SHIFT)) >> (32 - KIND_SHIFT);
    (bci, FrameKind::from_u8((raw >> KIND_SHIFT) as u8))
}

/// `ASGCT_CallTrace`: the request and result of one call.
#[repr(C)]
pub struct CallTrace {
    /// JNIEnv of the sampled thread (checked for null by HotSpot).
    pub env_id: *mut c_void,
    /// Frames written, or a negative [`AgctError`] code.
    pub num_frames: i32,
    pub frames: *mut CallFrame,
}

/// `void AsyncGetCallTrace(ASGCT_CallTrace*, jint depth, void* ucontext)`.
pub type AgctFn = unsafe extern "C" fn(trace: *mut CallTrace, depth: i32, ucontext: *mut c_void);

/// The function, once found (0 until then). Read by the signal handler.
static AGCT: AtomicUsize = AtomicUsize::new(0);

/// Looks AsyncGetCallTrace up in the already loaded libjvm.so.
pub fn locate() -> Option<AgctFn> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads
    // the loaded objects' symbol tables.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
    if address.is_null() {
        return None;
    }
    AGCT.store(address as usize, Ordering::Release);
    // SAFETY: the symbol is HotSpot's AsyncGetCallTrace, whose C signature is AgctFn.
    Some(unsafe { std::mem::transmute::<*mut c_void, AgctFn>(address) })
}

/// Uses `function` as AsyncGetCallTrace: for embedding the sampler in a VM
/// that exports it under another name, and for tests that exercise the
/// signal handler without a JVM.
pub fn use_function(function: AgctFn) {
    AGCT.store(function as usize, Ordering::Release);
}

/// The located function, for the signal handler (no allocation, one atomic load).
#[inline]
pub(crate) fn function() -> Option<AgctFn> {
    let address = AGCT.load(Ordering::Acquire);
    if address == 0 {
        None
    } else {
        // SAFETY: only `locate` stores nonzero values, and it stores the
        // address of a function of type AgctFn.
        Some(unsafe { std::mem::transmute::<usize, AgctFn>(address) })
    }
}

/// AsyncGetCallTrace's failure codes (`num_frames <= 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum AgctError {
    /// 0: the thread has no Java frame (ticks_no_Java_frame).
    NoJavaFrame,
    /// -1: ticks_no_class_load (no jmethodIDs: class loading events off).
    NoClassLoad,
    /// -2: a GC is running (ticks_GC_active).
    GcActive,
    /// -3: in native or VM code, not walkable to Java (ticks_unknown_not_Java).
    UnknownNotJava,
    /// -4: ticks_not_walkable_not_Java.
    NotWalkableNotJava,
    /// -5: in Java code, but the top frame could not be identified (ticks_unknown_Java).
    UnknownJava,
    /// -6: in Java code, stack not walkable (ticks_not_walkable_Java).
    NotWalkableJava,
    /// -7: ticks_unknown_state.
    UnknownState,
    /// -8: the thread is exiting or is not a Java thread (ticks_thread_exit).
    ThreadExit,
    /// -9: in the deoptimisation handler (ticks_deopt).
    Deopt,
    /// -10: at a safepoint (ticks_safepoint).
    Safepoint,
    /// Any other code a JDK may return.
    Other(i32),
}

impl AgctError {
    /// Whether the code says the thread is not running Java code at all (no
    /// Java frame, in native or VM code that cannot be walked, exiting), as
    /// JVM service threads always are; GC, safepoints and deoptimisation
    /// are passing states of Java threads.
    pub fn means_not_java(self) -> bool {
        matches!(
            self,
            AgctError::NoJavaFrame | AgctError::UnknownNotJava | AgctError::NotWalkableNotJava | AgctError::ThreadExit
        )
    }
}

impl AgctError {
    /// Every named code, for counters.
    pub const ALL: [AgctError; 11] = [
        AgctError::NoJavaFrame,
        AgctError::NoClassLoad,
        AgctError::GcActive,
        AgctError::UnknownNotJava,
        AgctError::NotWalkableNotJava,
        AgctError::UnknownJava,
        AgctError::NotWalkableJava,
        AgctError::UnknownState,
        AgctError::ThreadExit,
        AgctError::Deopt,
        AgctError::Safepoint,
    ];

    pub fn from_code(code: i32) -> AgctError {
        match code {
            0 => AgctError::NoJavaFrame,
            -1 => AgctError::NoClassLoad,
            -2 => AgctError::GcActive,
            -3 => AgctError::UnknownNotJava,
            -4 => AgctError::NotWalkableNotJava,
            -5 => AgctError::UnknownJava,
            -6 => AgctError::NotWalkableJava,
            -7 => AgctError::UnknownState,
            -8 => AgctError::ThreadExit,
            -9 => AgctError::Deopt,
            -10 => AgctError::Safepoint,
            other => AgctError::Other(other),
        }
    }

    pub fn code(self) -> i32 {
        match self {
            AgctError::NoJavaFrame => 0,
            AgctError::NoClassLoad => -1,
            AgctError::GcActive => -2,
            AgctError::UnknownNotJava => -3,
            AgctError::NotWalkableNotJava => -4,
            AgctError::UnknownJava => -5,
            AgctError::NotWalkableJava => -6,
            AgctError::UnknownState => -7,
            AgctError::ThreadExit => -8,
            AgctError::Deopt => -9,
            AgctError::Safepoint => -10,
            AgctError::Other(code) => code,
        }
    }

    /// The pseudo-frame a failed sample is recorded under (the names other
    /// profilers use, so flame graphs read alike).
    pub fn pseudo_frame(self) -> &'static str {
        match self {
            AgctError::NoJavaFrame => "[no_Java_frame]",
            AgctError::NoClassLoad => "[no_class_load]",
            AgctError::GcActive => "[gc_active]",
            AgctError::UnknownNotJava => "[unknown_not_Java]",
            AgctError::NotWalkableNotJava => "[not_walkable_not_Java]",
            AgctError::UnknownJava => "[unknown_Java]",
            AgctError::NotWalkableJava => "[not_walkable_Java]",
            AgctError::UnknownState => "[unknown_state]",
            AgctError::ThreadExit => "[thread_exit]",
            AgctError::Deopt => "[deoptimization]",
            AgctError::Safepoint => "[safepoint]",
            AgctError::Other(_) => "[agct_error]",
        }
    }

    /// Short label for metrics (`reason="gc_active"`).
    pub fn label(self) -> &'static str {
        let name = self.pseudo_frame();
        &name[1..name.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bci_and_kind_comes_back_from_a_packed_bci() {
        for kind in FrameKind::ALL {
            for bci in -3..=65_535 {
                assert_eq!(unpack_kind(pack_kind(bci, kind)), (bci, kind), "{bci} {kind:?}");
            }
        }
        // A native frame's bci (the sampler's `native_frames::NATIVE_BCI`) has no kind.
        assert_eq!(unpack_kind(pack_kind(i32::MIN, FrameKind::Unknown)), (i32::MIN, FrameKind::Unknown));
    }

    #[test]
    fn raw_frames_keep_their_bci_when_kinds_are_off() {
        let frame = CallFrame { lineno: 12, kind: FrameKind::Inlined as u8, method_id: 0x1000 as *mut c_void };
        assert_eq!(frame.raw(false), (0x1000, 12));
        assert_eq!(unpack_kind(frame.raw(true).1), (12, FrameKind::Inlined));
    }
}
