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
//! layout is looked up once, from the type object's own slot (never what a metaclass
//! answers for `__dictoffset__`), and followed only where CPython would follow it; a
//! class whose dict is elsewhere (a negative or managed offset) is read through
//! `__dict__` as before. Whether a class supplies `retry_after` itself is each retrier's
//! answer ([`ClassAnswers`]): a class can gain one later.

use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyType};

/// Where a class's instances keep their dict: `tp_dictoffset`, found once per class.
struct Entry {
    class: AtomicPtr<ffi::PyTypeObject>,
    /// > 0 the dict pointer's offset, 0 no instance dict, < 0 elsewhere (read `__dict__`).
    dict_offset: AtomicIsize,
}

/// Classes a program raises are few: past this many, a class is looked up each time.
const SIZE: usize = 64;
static ENTRIES: [Entry; SIZE] =
    [const { Entry { class: AtomicPtr::new(std::ptr::null_mut()), dict_offset: AtomicIsize::new(0) } }; SIZE];
/// Entries filled (each written before the count that publishes it).
static FILLED: AtomicUsize = AtomicUsize::new(0);
/// The classes of the entries, held so that an entry's class is never freed and its
/// address reused by another class (a class's layout never changes, so an entry stays
/// true for the life of the process). Also serialises the writers.
static HELD: Mutex<Vec<Py<PyType>>> = Mutex::new(Vec::new());

/// `type`'s own descriptors of `__dictoffset__` and `__basicsize__`: they read the type
/// object's C fields. `cls.__dictoffset__` would go through the class's metaclass, which
/// may define a `__dictoffset__` of its own and make a number this module then
/// dereferences (a crash from pure Python).
static SLOTS: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn type_slot(class: &Bound<'_, PyType>, which: usize) -> PyResult<isize> {
    let py = class.py();
    let (offset, size) = SLOTS.get_or_try_init(py, || -> PyResult<_> {
        let own = py.get_type::<PyType>().getattr(pyo3::intern!(py, "__dict__"))?;
        Ok((own.get_item("__dictoffset__")?.unbind(), own.get_item("__basicsize__")?.unbind()))
    })?;
    let descriptor = if which == 0 { offset } else { size };
    descriptor.bind(py).call_method1(pyo3::intern!(py, "__get__"), (class, py.get_type::<PyType>()))?.extract()
}

/// The offset of `class`'s instance dict pointer, > 0 only when it is one CPython itself
/// would follow: aligned, and inside the instance's fixed part.
fn read_dict_offset(class: &Bound<'_, PyType>) -> PyResult<isize> {
    let offset = type_slot(class, 0)?;
    if offset <= 0 {
        return Ok(offset);
    }
    let pointer = std::mem::size_of::<*mut ffi::PyObject>() as isize;
    let basic_size = type_slot(class, 1)?;
    Ok(if offset % pointer == 0 && offset + pointer <= basic_size { offset } else { -1 })
}

fn dict_offset(obj: &Bound<'_, PyAny>) -> PyResult<isize> {
    let class = obj.get_type();
    let ptr = class.as_type_ptr();
    let filled = FILLED.load(Ordering::Acquire);
    for e in &ENTRIES[..filled] {
        if e.class.load(Ordering::Relaxed) == ptr {
            return Ok(e.dict_offset.load(Ordering::Relaxed));
        }
    }
    let dict_offset = read_dict_offset(&class)?;
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let n = FILLED.load(Ordering::Relaxed);
    let known = ENTRIES[..n].iter().any(|e| e.class.load(Ordering::Relaxed) == ptr);
    if n < SIZE && !known {
        let e = &ENTRIES[n];
        e.dict_offset.store(dict_offset, Ordering::Relaxed);
        e.class.store(ptr, Ordering::Relaxed);
        held.push(class.unbind());
        FILLED.store(n + 1, Ordering::Release);
    }
    Ok(dict_offset)
}

/// One retrier's answers to "may this class supply `retry_after` beyond the instance
/// dict (a class attribute, a property, `__getattr__`)?": per retrier, as a class can
/// gain such an attribute later (a test's monkeypatch), which a retrier made after sees.
/// Lock-free to read; the classes are held, so an entry never outlives its class, and
/// freed with the retrier.
pub struct ClassAnswers {
    classes: [AtomicPtr<ffi::PyTypeObject>; ANSWERS],
    answers: [AtomicBool; ANSWERS],
    filled: AtomicUsize,
    held: Mutex<Vec<Py<PyType>>>,
}

/// Distinct classes one retrier remembers (more are looked up each time).
const ANSWERS: usize = 32;

impl Default for ClassAnswers {
    fn default() -> Self {
        ClassAnswers {
            classes: [const { AtomicPtr::new(std::ptr::null_mut()) }; ANSWERS],
            answers: [const { AtomicBool::new(false) }; ANSWERS],
            filled: AtomicUsize::new(0),
            held: Mutex::new(Vec::new()),
        }
    }
}

impl ClassAnswers {
    fn supplies_retry_after(&self, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
        let class = obj.get_type();
        let ptr = class.as_type_ptr();
        let filled = self.filled.load(Ordering::Acquire);
        for (c, a) in self.classes[..filled].iter().zip(&self.answers) {
            if c.load(Ordering::Relaxed) == ptr {
                return Ok(a.load(Ordering::Relaxed));
            }
        }
        let py = obj.py();
        let supplies = class.getattr_opt(pyo3::intern!(py, "retry_after"))?.is_some()
            || class.getattr_opt(pyo3::intern!(py, "__getattr__"))?.is_some();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.filled.load(Ordering::Relaxed);
        let known = self.classes[..n].iter().any(|c| c.load(Ordering::Relaxed) == ptr);
        if n < ANSWERS && !known {
            self.answers[n].store(supplies, Ordering::Relaxed);
            self.classes[n].store(ptr, Ordering::Relaxed);
            held.push(class.unbind());
            self.filled.store(n + 1, Ordering::Release);
        }
        Ok(supplies)
    }
}

/// `obj`'s own attribute `key`: the entry of its instance dict, if it has one.
pub fn own_attr<'py>(obj: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match instance_dict(obj, dict_offset(obj)?) {
        Dict::Found(d) => d.get_item(key),
        Dict::None | Dict::Unknown => Ok(None),
    }
}

/// `exc.retry_after` as a hint: the attribute when the class may supply it (a class
/// attribute, a property, `__getattr__`), else the instance dict's entry.
pub fn retry_after<'py>(exc: &Bound<'py, PyAny>, answers: &ClassAnswers) -> PyResult<Option<Bound<'py, PyAny>>> {
    let key = pyo3::intern!(exc.py(), "retry_after");
    if answers.supplies_retry_after(exc)? {
        return exc.getattr_opt(key);
    }
    match instance_dict(exc, dict_offset(exc)?) {
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
