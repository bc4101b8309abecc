//! HotSpot's self-description: the `gHotSpotVMStructs`, `gHotSpotVMTypes`,
//! `gHotSpotVMIntConstants` and `gHotSpotVMLongConstants` tables that
//! libjvm.so exports for the serviceability agent (`vmStructs.cpp`). They
//! name the fields of HotSpot's classes with their offsets (and static
//! fields with their addresses), the sizes of its types and its constants,
//! so pcct reads the structures of the JVM it runs in, whatever its build.
//!
//! The tables are static data of libjvm.so, complete as soon as the library
//! is loaded: they are read here once (at `Agent_OnLoad` for the flags, when
//! the sampler starts for the frame walker), never in a signal handler.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};

/// One field: its offset in its class, or for a static field its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub address: usize,
    pub is_static: bool,
}

/// The tables, read into maps.
#[derive(Clone, Debug, Default)]
pub struct VmStructs {
    fields: HashMap<(String, String), Field>,
    /// The C++ type of each field (`int`, `int16_t`, `address`, ...).
    field_types: HashMap<(String, String), String>,
    sizes: HashMap<String, usize>,
    constants: HashMap<String, i64>,
}

impl VmStructs {
    /// Reads the tables of the libjvm.so loaded in this process; `None` when
    /// there is none (not HotSpot) or its tables are not exported.
    pub fn of_this_process() -> Option<VmStructs> {
        let symbols = Symbols::look_up()?;
        // SAFETY: the symbols are HotSpot's exported tables, laid out as the
        // exported stride and offset variables describe (vmStructs.cpp);
        // each table ends with an entry whose name pointers are null.
        unsafe { Some(symbols.read()) }
    }

    /// Builds tables by hand (tests).
    pub fn from_parts(
        fields: impl IntoIterator<Item = (&'static str, &'static str, Field)>,
        sizes: impl IntoIterator<Item = (&'static str, usize)>,
        constants: impl IntoIterator<Item = (&'static str, i64)>,
    ) -> VmStructs {
        VmStructs {
            fields: fields.into_iter().map(|(t, f, field)| ((t.to_string(), f.to_string()), field)).collect(),
            field_types: HashMap::new(),
            sizes: sizes.into_iter().map(|(t, size)| (t.to_string(), size)).collect(),
            constants: constants.into_iter().map(|(name, value)| (name.to_string(), value)).collect(),
        }
    }

    /// The field `class::field`.
    pub fn field(&self, class: &str, field: &str) -> Option<Field> {
        self.fields.get(&(class.to_string(), field.to_string())).copied()
    }

    /// The C++ type of the field `class::field`, as the tables name it.
    pub fn field_type(&self, class: &str, field: &str) -> Option<&str> {
        self.field_types.get(&(class.to_string(), field.to_string())).map(String::as_str)
    }

    /// The offset of the instance field `class::field`.
    pub fn offset(&self, class: &str, field: &str) -> Option<usize> {
        self.field(class, field).filter(|f| !f.is_static).map(|f| f.offset)
    }

    /// The address of the static field `class::field`.
    pub fn address(&self, class: &str, field: &str) -> Option<usize> {
        self.field(class, field).filter(|f| f.is_static && f.address != 0).map(|f| f.address)
    }

    /// `sizeof(type)`.
    pub fn size(&self, type_name: &str) -> Option<usize> {
        self.sizes.get(type_name).copied()
    }

    /// An integer or long constant.
    pub fn constant(&self, name: &str) -> Option<i64> {
        self.constants.get(name).copied()
    }
}

/// The exported symbols that describe the tables' layout.
struct Symbols {
    structs: usize,
    types: usize,
    ints: usize,
    longs: usize,
}

fn symbol(name: &CStr) -> Option<usize> {
    // SAFETY: dlsym with RTLD_DEFAULT only reads the loaded objects' symbol tables.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
    (address != 0).then_some(address)
}

/// The value of an exported `uint64_t` or pointer variable.
fn symbol_value(name: &CStr) -> Option<usize> {
    // SAFETY: the symbol is an exported variable of pointer size.
    symbol(name).map(|address| unsafe { *(address as *const usize) })
}

/// Reads a NUL-terminated string; `None` for a null pointer.
///
/// # Safety
/// `pointer` is null or points to a NUL-terminated string.
unsafe fn string(pointer: usize) -> Option<String> {
    if pointer == 0 {
        return None;
    }
    // SAFETY: as the caller promises.
    Some(unsafe { CStr::from_ptr(pointer as *const c_char) }.to_string_lossy().into_owned())
}

/// Reads a `T` at `address`.
///
/// # Safety
/// `address` points to a readable, aligned `T` of the tables.
unsafe fn at<T: Copy>(address: usize) -> T {
    // SAFETY: as the caller promises.
    unsafe { *(address as *const T) }
}

impl Symbols {
    fn look_up() -> Option<Symbols> {
        Some(Symbols {
            structs: symbol_value(c"gHotSpotVMStructs")?,
            types: symbol_value(c"gHotSpotVMTypes")?,
            ints: symbol_value(c"gHotSpotVMIntConstants")?,
            longs: symbol_value(c"gHotSpotVMLongConstants")?,
        })
    }

    /// # Safety
    /// The tables are HotSpot's (see [`VmStructs::of_this_process`]).
    unsafe fn read(&self) -> VmStructs {
        let mut tables = VmStructs::default();
        // SAFETY: each reader follows the layout HotSpot exports.
        unsafe {
            self.read_fields(&mut tables);
            self.read_types(&mut tables);
            self.read_constants(&mut tables, self.ints, c"Int", |address| at::<i32>(address) as i64);
            self.read_constants(&mut tables, self.longs, c"Long", |address| at::<i64>(address));
        }
        tables
    }

    /// # Safety
    /// As [`Symbols::read`].
    unsafe fn read_fields(&self, tables: &mut VmStructs) {
        let layout = [
            c"gHotSpotVMStructEntryArrayStride",
            c"gHotSpotVMStructEntryTypeNameOffset",
            c"gHotSpotVMStructEntryFieldNameOffset",
            c"gHotSpotVMStructEntryTypeStringOffset",
            c"gHotSpotVMStructEntryIsStaticOffset",
            c"gHotSpotVMStructEntryOffsetOffset",
            c"gHotSpotVMStructEntryAddressOffset",
        ]
        .map(symbol_value);
        let [Some(stride), Some(type_name), Some(field_name), Some(type_string), Some(is_static), Some(offset), Some(address)] =
            layout
        else {
            return;
        };
        let mut entry = self.structs;
        // SAFETY: entries are `stride` apart until the terminating one.
        unsafe {
            while let (Some(class), Some(field)) =
                (string(at::<usize>(entry + type_name)), string(at::<usize>(entry + field_name)))
            {
                let value = Field {
                    offset: at::<u64>(entry + offset) as usize,
                    address: at::<usize>(entry + address),
                    is_static: at::<i32>(entry + is_static) != 0,
                };
                if let Some(type_string) = string(at::<usize>(entry + type_string)) {
                    tables.field_types.insert((class.clone(), field.clone()), type_string);
                }
                tables.fields.insert((class, field), value);
                entry += stride;
            }
        }
    }

    /// # Safety
    /// As [`Symbols::read`].
    unsafe fn read_types(&self, tables: &mut VmStructs) {
        let layout =
            [c"gHotSpotVMTypeEntryArrayStride", c"gHotSpotVMTypeEntryTypeNameOffset", c"gHotSpotVMTypeEntrySizeOffset"]
                .map(symbol_value);
        let [Some(stride), Some(type_name), Some(size)] = layout else { return };
        let mut entry = self.types;
        // SAFETY: entries are `stride` apart until the terminating one.
        unsafe {
            while let Some(name) = string(at::<usize>(entry + type_name)) {
                tables.sizes.insert(name, at::<u64>(entry + size) as usize);
                entry += stride;
            }
        }
    }

    /// # Safety
    /// As [`Symbols::read`]; `value` reads the constant's type.
    unsafe fn read_constants(&self, tables: &mut VmStructs, first: usize, kind: &CStr, value: impl Fn(usize) -> i64) {
        let kind = kind.to_string_lossy();
        let names = [
            format!("gHotSpotVM{kind}ConstantEntryArrayStride\0"),
            format!("gHotSpotVM{kind}ConstantEntryNameOffset\0"),
            format!("gHotSpotVM{kind}ConstantEntryValueOffset\0"),
        ];
        let layout = names.map(|name| CStr::from_bytes_with_nul(name.as_bytes()).ok().and_then(symbol_value));
        let [Some(stride), Some(name_offset), Some(value_offset)] = layout else { return };
        let mut entry = first;
        // SAFETY: entries are `stride` apart until the terminating one.
        unsafe {
            while let Some(name) = string(at::<usize>(entry + name_offset)) {
                tables.constants.insert(name, value(entry + value_offset));
                entry += stride;
            }
        }
    }
}
