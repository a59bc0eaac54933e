//! The live objects: reading them, creating one, noting that the host
//! supplied a live version's text, and the transitions of one (a new
//! generation, a re-home, removal), each retiring what it outdates in the
//! same call.
//!
//! Part of the `dag` module; see its docs for the invariants these keep.
//! A transition here checks the caller's witness and then leaves the
//! records to `sweep.rs`; it never edits a node, group, edge or blocker
//! record itself, and never hands out a new incarnation except by
//! [`Incarnation::allocate`].

use super::*;

impl<P> SchedulerDag<P> {
    /// The live object of `canonical`, if any.
    #[inline]
    pub fn object(&self, canonical: &Canonical) -> Option<ObjectRecord> {
        self.files.get(canonical)?.object
    }

    /// The live identity of `canonical` (its object at its current
    /// generation), if any.
    #[inline]
    pub fn live_file(&self, canonical: &Canonical) -> Option<FileIdentity> {
        let object = self.object(canonical)?;
        Some(FileIdentity::new(
            *canonical,
            object.incarnation,
            object.generation,
        ))
    }

    /// Notes that the host supplied the text of live `file` (an upsert): a
    /// Source of that version admitted from now on is ready on the CPU
    /// budget at once instead of on I/O, as there is nothing to load. The
    /// caller keeps that text where the Source dispatch reads it. A later
    /// version is not covered.
    pub fn note_text_known(&mut self, file: &FileIdentity) {
        // One lookup: the record's own object says whether `file` is live.
        if let Some(records) = self.files.get_mut(&file.canonical)
            && records.object.is_some_and(|object| {
                object.incarnation == file.incarnation && object.generation == file.generation
            })
        {
            records.text_known = Some(file.version());
        }
    }

    /// Undoes [`Self::note_text_known`] for `file`: its caller let the
    /// text go, so a Source of that version admitted from now on starts on
    /// I/O and loads it again.
    pub fn note_text_released(&mut self, file: &FileIdentity) {
        if let Some(records) = self.files.get_mut(&file.canonical)
            && records.text_known == Some(file.version())
        {
            records.text_known = None;
        }
    }

    /// Whether `file` names the live object at its current generation.
    #[inline]
    pub fn is_live(&self, file: &FileIdentity) -> bool {
        self.object(&file.canonical).is_some_and(|object| {
            object.incarnation == file.incarnation && object.generation == file.generation
        })
    }

    /// Returns the live object of `canonical`, creating one (new incarnation,
    /// new lifetime, generation 0) when there is none: an atomic ensure,
    /// never a replace. The flag says whether it was created.
    pub fn ensure_object(&mut self, canonical: &Canonical) -> (ObjectRecord, bool) {
        let records = self.files.get_or_default(canonical);
        if let Some(object) = records.object {
            return (object, false);
        }
        let object = ObjectRecord {
            incarnation: Incarnation::allocate(),
            generation: Generation::ZERO,
            lifetime: SubmissionLifetime::allocate(),
        };
        records.object = Some(object);
        (object, true)
    }

    /// Advances the live object's generation (checked) and retires every
    /// record of older versions in the same call: followers move to the new
    /// generation, pinned requests are answered `Superseded`.
    pub fn advance_generation(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<(FileIdentity, Effects), ObjectError> {
        let object = self.expect_object(canonical, incarnation)?;
        let generation = object.generation.next()?;
        let records = self.files.get_mut(canonical).expect("checked live above");
        records.object = Some(ObjectRecord {
            generation,
            ..object
        });
        let live = FileIdentity::new(*canonical, incarnation, generation);
        let effects = self.sweep(canonical, live.version(), SweepReason::NewGeneration);
        Ok((live, effects))
    }

    /// Retires every record of `canonical` below `(incarnation, generation)`:
    /// file waiters, admitted nodes, dependency waiters (including those of
    /// producers reached only through the file index), blocker records and
    /// failure records. Followers move to the live version; pinned requests
    /// are answered `Superseded`. Records at or above the bound are untouched.
    pub fn retire_generations_below(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
        generation: Generation,
    ) -> Effects {
        self.sweep(
            canonical,
            SourceVersion::new(incarnation, generation),
            SweepReason::NewGeneration,
        )
    }

    /// Replaces the live object with a new incarnation at generation 0 that
    /// keeps the submission lifetime (a language re-home). Every waiter of the
    /// old object follows the replacement.
    pub fn rehome_object(
        &mut self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<(FileIdentity, Effects), ObjectError> {
        let object = self.expect_object(canonical, incarnation)?;
        let replacement = ObjectRecord {
            incarnation: Incarnation::allocate(),
            generation: Generation::ZERO,
            lifetime: object.lifetime,
        };
        self.files
            .get_mut(canonical)
            .expect("checked live above")
            .object = Some(replacement);
        let live = FileIdentity::new(*canonical, replacement.incarnation, Generation::ZERO);
        let effects = self.sweep(canonical, live.version(), SweepReason::Rehome);
        Ok((live, effects))
    }

    /// Removes `canonical`'s object: every waiter of it is answered
    /// `Shutdown`, its work is cancelled (running work is abandoned and its
    /// result will be refused), its records are scrubbed, and consumers in
    /// other files that wait on it fail with `DependencyFailed`. A later
    /// [`Self::ensure_object`] creates a successor with a new incarnation at
    /// generation 0. Returns no effects when nothing was live or recorded.
    pub fn remove_object(&mut self, canonical: &Canonical) -> Effects {
        let Some(records) = self.files.get_mut(canonical) else {
            return Effects::default();
        };
        records.object = None;
        let bound = SourceVersion::new(Incarnation::SWEEP_ALL, Generation::MAX);
        let effects = self.sweep(canonical, bound, SweepReason::Removal);
        self.drop_file_if_empty(canonical);
        effects
    }
}
