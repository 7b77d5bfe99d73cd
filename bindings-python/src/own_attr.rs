//! An object's own attribute (its instance dict's entry), read on every failure without
//! building anything: the `retry_after` hint of an exception whose class supplies none,
//! and the HTTP helpers' timeout marker.
//!
//! A plain `getattr` that misses builds an AttributeError and its message (Python < 3.13
//! under the stable ABI has no lookup that skips it), and reading `__dict__` instead
//! creates the dict of every exception that has none yet (most have none): either costs
//! more than the rest of a failure's handling. So the instance dict is found where the
//! class's `__dictoffset__` says it is (the C API's `tp_dictoffset`: when positive, the
//! offset of the dict pointer in every instance; every exception class has one, from
//! BaseException), a null pointer meaning no dict, hence no attribute. Each class's
//! layout is looked up once; a class whose dict is elsewhere (a negative or managed
//! offset) is read through `__dict__` as before.

use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};

/// What is known of a class: where its instances keep their dict, and whether the class
/// itself (or its `__getattr__`) may supply `retry_after`.
struct Entry {
    class: AtomicPtr<ffi::PyTypeObject>,
    /// `tp_dictoffset`: > 0 the dict pointer's offset, 0 no instance dict, < 0 elsewhere.
    dict_offset: AtomicIsize,
    supplies_retry_after: AtomicBool,
}

/// Classes a program raises are few: past this many, a class is looked up each time.
const SIZE: usize = 64;
static ENTRIES: [Entry; SIZE] = [const {
    Entry {
        class: AtomicPtr::new(std::ptr::null_mut()),
        dict_offset: AtomicIsize::new(0),
        supplies_retry_after: AtomicBool::new(false),
    }
}; SIZE];
/// Entries filled (each written before the count that publishes it).
static FILLED: AtomicUsize = AtomicUsize::new(0);
/// The classes of the entries, held so that an entry's class is never freed and its
/// address reused by another class. Also serialises the writers.
static HELD: Mutex<Vec<Py<PyType>>> = Mutex::new(Vec::new());

#[derive(Clone, Copy)]
struct Layout {
    dict_offset: isize,
    supplies_retry_after: bool,
}

fn layout(obj: &Bound<'_, PyAny>) -> PyResult<Layout> {
    let class = obj.get_type();
    let ptr = class.as_type_ptr();
    let filled = FILLED.load(Ordering::Acquire);
    for e in &ENTRIES[..filled] {
        if e.class.load(Ordering::Relaxed) == ptr {
            return Ok(Layout {
                dict_offset: e.dict_offset.load(Ordering::Relaxed),
                supplies_retry_after: e.supplies_retry_after.load(Ordering::Relaxed),
            });
        }
    }
    let py = obj.py();
    let dict_offset = class.getattr(pyo3::intern!(py, "__dictoffset__"))?.extract::<isize>()?;
    let supplies_retry_after = class.getattr_opt(pyo3::intern!(py, "retry_after"))?.is_some()
        || class.getattr_opt(pyo3::intern!(py, "__getattr__"))?.is_some();
    let found = Layout { dict_offset, supplies_retry_after };
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let n = FILLED.load(Ordering::Relaxed);
    let known = ENTRIES[..n].iter().any(|e| e.class.load(Ordering::Relaxed) == ptr);
    if n < SIZE && !known {
        let e = &ENTRIES[n];
        e.dict_offset.store(dict_offset, Ordering::Relaxed);
        e.supplies_retry_after.store(supplies_retry_after, Ordering::Relaxed);
        e.class.store(ptr, Ordering::Relaxed);
        held.push(class.unbind());
        FILLED.store(n + 1, Ordering::Release);
    }
    Ok(found)
}

/// `obj`'s own attribute `key`: the entry of its instance dict, if it has one.
pub fn own_attr<'py>(obj: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match instance_dict(obj, layout(obj)?.dict_offset) {
        Dict::Found(d) => d.get_item(key),
        Dict::None | Dict::Unknown => Ok(None),
    }
}

/// `exc.retry_after` as a hint: the attribute when the class may supply it (a class
/// attribute, a property, `__getattr__`), else the instance dict's entry.
pub fn retry_after<'py>(exc: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let key = pyo3::intern!(exc.py(), "retry_after");
    let layout = layout(exc)?;
    if layout.supplies_retry_after {
        return exc.getattr_opt(key);
    }
    match instance_dict(exc, layout.dict_offset) {
        Dict::Found(d) => d.get_item(key),
        Dict::None => Ok(None),
        Dict::Unknown => exc.getattr_opt(key),
    }
}

enum Dict<'py> {
    Found(Bound<'py, PyDict>),
    /// The object has no instance dict (yet): no attribute of its own.
    None,
    /// No dict to be found (`__dict__` missing, or not a dict).
    Unknown,
}

fn instance_dict<'py>(obj: &Bound<'py, PyAny>, offset: isize) -> Dict<'py> {
    let py = obj.py();
    let found = if offset > 0 {
        // SAFETY: a positive tp_dictoffset is where every instance of the class keeps its
        // dict pointer (null until a dict is made); `obj` is alive (borrowed) and the GIL
        // is held, so this reads the object's current dict, if any.
        let dict = unsafe { *obj.as_ptr().cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>() };
        if dict.is_null() {
            return Dict::None;
        }
        // SAFETY: a live object's dict pointer is a live object (CPython stores only a
        // dict there); borrowed with the GIL held, a new reference taken.
        unsafe { Bound::from_borrowed_ptr(py, dict) }
    } else {
        match obj.getattr(pyo3::intern!(py, "__dict__")) {
            Ok(d) => d,
            Err(_) => return Dict::Unknown,
        }
    };
    match found.cast_into::<PyDict>() {
        Ok(d) => Dict::Found(d),
        Err(_) => Dict::Unknown,
    }
}
