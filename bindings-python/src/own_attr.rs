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

use std::sync::atomic::{AtomicIsize, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyType};

/// A few classes' answers to one question (a number), lock-free to read: readers scan the
/// entries published so far; writers, one at a time (under `held`), fill the next entry
/// and publish it. Past `N` classes, a class is looked up each time. Each class is held,
/// so an entry never outlives its class, nor is its address reused by another class.
pub struct ClassTable<const N: usize> {
    classes: [AtomicPtr<ffi::PyTypeObject>; N],
    answers: [AtomicIsize; N],
    /// Entries filled (each written before the count that publishes it).
    filled: AtomicUsize,
    held: Mutex<Vec<Py<PyType>>>,
}

impl<const N: usize> ClassTable<N> {
    pub const fn new() -> Self {
        ClassTable {
            classes: [const { AtomicPtr::new(std::ptr::null_mut()) }; N],
            answers: [const { AtomicIsize::new(0) }; N],
            filled: AtomicUsize::new(0),
            held: Mutex::new(Vec::new()),
        }
    }

    fn find(&self, class: *mut ffi::PyTypeObject, filled: usize) -> Option<isize> {
        let classes = self.classes[..filled].iter();
        classes
            .zip(&self.answers)
            .find(|(c, _)| c.load(Ordering::Relaxed) == class)
            .map(|(_, a)| a.load(Ordering::Relaxed))
    }

    /// `class`'s answer: the one kept, or `ask(class)`, kept while there is room.
    fn answer(
        &self,
        class: &Bound<'_, PyType>,
        ask: impl FnOnce(&Bound<'_, PyType>) -> PyResult<isize>,
    ) -> PyResult<isize> {
        let ptr = class.as_type_ptr();
        if let Some(answer) = self.find(ptr, self.filled.load(Ordering::Acquire)) {
            return Ok(answer);
        }
        let answer = ask(class)?;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.filled.load(Ordering::Relaxed);
        if n < N && self.find(ptr, n).is_none() {
            self.answers[n].store(answer, Ordering::Relaxed);
            self.classes[n].store(ptr, Ordering::Relaxed);
            held.push(class.clone().unbind());
            self.filled.store(n + 1, Ordering::Release);
        }
        Ok(answer)
    }
}

/// Where each class's instances keep their dict (`read_dict_offset`): a class's layout
/// never changes, so one table serves the whole process. Classes a program raises are few.
static DICT_OFFSETS: ClassTable<64> = ClassTable::new();

/// One retrier's answers to "may this class supply `retry_after` beyond the instance
/// dict (a class attribute, a property, `__getattr__`)?", 1 or 0: per retrier, as a class
/// can gain such an attribute later (a test's monkeypatch), which a retrier made after
/// sees; its classes are freed with the retrier.
pub type ClassAnswers = ClassTable<32>;

/// `type`'s own descriptors of `__dictoffset__` and `__basicsize__`: they read the type
/// object's C fields. `cls.__dictoffset__` would go through the class's metaclass, which
/// may define a `__dictoffset__` of its own and make a number this module then
/// dereferences (a crash from pure Python).
struct TypeFields {
    dict_offset: Py<PyAny>,
    basic_size: Py<PyAny>,
}

static TYPE_FIELDS: PyOnceLock<TypeFields> = PyOnceLock::new();

/// `class`'s C field that `field` (one of [`TypeFields`]) reads.
fn type_field(class: &Bound<'_, PyType>, field: &Py<PyAny>) -> PyResult<isize> {
    let py = class.py();
    field.bind(py).call_method1(pyo3::intern!(py, "__get__"), (class, py.get_type::<PyType>()))?.extract()
}

/// The offset of `class`'s instance dict pointer, > 0 only when it is one CPython itself
/// would follow: aligned, and inside the instance's fixed part.
fn read_dict_offset(class: &Bound<'_, PyType>) -> PyResult<isize> {
    let py = class.py();
    let fields = TYPE_FIELDS.get_or_try_init(py, || -> PyResult<_> {
        let own = py.get_type::<PyType>().getattr(pyo3::intern!(py, "__dict__"))?;
        Ok(TypeFields {
            dict_offset: own.get_item("__dictoffset__")?.unbind(),
            basic_size: own.get_item("__basicsize__")?.unbind(),
        })
    })?;
    let offset = type_field(class, &fields.dict_offset)?;
    if offset <= 0 {
        return Ok(offset);
    }
    let pointer = std::mem::size_of::<*mut ffi::PyObject>() as isize;
    let basic_size = type_field(class, &fields.basic_size)?;
    Ok(if offset % pointer == 0 && offset + pointer <= basic_size { offset } else { -1 })
}

fn supplies_retry_after(class: &Bound<'_, PyType>) -> PyResult<isize> {
    let py = class.py();
    let supplies = class.getattr_opt(pyo3::intern!(py, "retry_after"))?.is_some()
        || class.getattr_opt(pyo3::intern!(py, "__getattr__"))?.is_some();
    Ok(isize::from(supplies))
}

/// `obj`'s own attribute `key`: the entry of its instance dict, if it has one.
pub fn own_attr<'py>(obj: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match instance_dict(obj, DICT_OFFSETS.answer(&obj.get_type(), read_dict_offset)?) {
        Dict::Found(d) => d.get_item(key),
        Dict::None | Dict::Unknown => Ok(None),
    }
}

/// `exc.retry_after` as a hint: the attribute when the class may supply it (a class
/// attribute, a property, `__getattr__`), else the instance dict's entry.
pub fn retry_after<'py>(exc: &Bound<'py, PyAny>, answers: &ClassAnswers) -> PyResult<Option<Bound<'py, PyAny>>> {
    let key = pyo3::intern!(exc.py(), "retry_after");
    let class = exc.get_type();
    if answers.answer(&class, supplies_retry_after)? != 0 {
        return exc.getattr_opt(key);
    }
    match instance_dict(exc, DICT_OFFSETS.answer(&class, read_dict_offset)?) {
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
