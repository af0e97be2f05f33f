//! A part of the desired state that copies share until one changes it.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// `T` shared by the copies of a [`super::Desired`] until one of them
/// changes it, which then gets its own: each environment of a fleet starts
/// as a copy of the base files, and most change nothing (copying a
/// 1,000-queue topology and its places took a twelfth of each
/// environment's plan).
#[derive(Debug, Default, Clone)]
pub struct Shared<T>(Arc<T>);

impl<T: Clone> Shared<T> {
    pub fn new(value: T) -> Self {
        Shared(Arc::new(value))
    }

    /// The value, copied only when another copy still shares it.
    pub fn into_inner(self) -> T {
        Arc::unwrap_or_clone(self.0)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

/// Equal when the values are.
impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        *self.0 == *other.0
    }
}

impl<T: Clone> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}
