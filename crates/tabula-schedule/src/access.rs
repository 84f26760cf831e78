//! What a whole system accesses: the per-parameter component/resource accesses, plus the
//! two blunt forms (`&World` reads everything; exclusive systems touch everything).

use tabula_core::Access;

/// The access of one system, as the schedule sees it when it builds the conflict graph.
#[derive(Clone, Debug, Default)]
pub struct SystemAccess {
    /// One entry per parameter that touches data, with its name (for messages).
    params: Vec<(String, Access)>,
    /// Accesses that only order this system against others (`SystemMeta::add_ordering_access`).
    /// They stand for no
    /// data the system's other parameters can reach, so they never conflict within one
    /// system, `&World` included.
    ordering: Vec<(String, Access)>,
    reads_all: bool,
    exclusive: bool,
    deferred: bool,
}

impl SystemAccess {
    /// An access that conflicts with every other system (`&mut World`, sync points).
    pub fn exclusive() -> Self {
        Self {
            exclusive: true,
            ..Self::default()
        }
    }

    /// Marks the system as recording deferred work (it has a `Commands` parameter), so the
    /// schedule puts a sync point after it where an ordering edge leaves it.
    pub fn set_deferred(&mut self) {
        self.deferred = true;
    }

    /// True when the system may record deferred work.
    pub fn is_deferred(&self) -> bool {
        self.deferred
    }

    /// True for `&mut World` systems and sync points.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// True when the system reads the whole world (`&World`).
    pub fn reads_all(&self) -> bool {
        self.reads_all
    }

    /// Marks the system as reading everything.
    pub fn set_reads_all(&mut self) {
        self.reads_all = true;
    }

    /// The per-parameter accesses.
    pub fn params(&self) -> &[(String, Access)] {
        &self.params
    }

    /// True when any parameter writes (ordering accesses included).
    pub fn writes_anything(&self) -> bool {
        self.exclusive
            || self
                .params
                .iter()
                .chain(&self.ordering)
                .any(|(_, a)| !a.writes().is_empty())
    }

    /// Adds an access that only orders this system against others (see the `ordering`
    /// field): it is not checked against this system's own parameters.
    pub fn add_ordering(&mut self, name: String, access: Access) {
        self.ordering.push((name, access));
    }

    /// Adds a parameter's access, checking it against the parameters already added.
    ///
    /// Returns the name of the earlier parameter and the conflicting component ids when the
    /// two would alias (e.g. `Query<&mut A>` and `Query<&A>` without disjoint filters).
    pub fn add_param(
        &mut self,
        name: String,
        access: Access,
    ) -> Result<(), (String, Vec<tabula_core::ComponentId>)> {
        if self.reads_all && !access.writes().is_empty() {
            return Err(("&World".to_string(), access.writes().ids().collect()));
        }
        for (other_name, other) in &self.params {
            let conflicts = other.conflicts(&access);
            if !conflicts.is_empty() {
                return Err((other_name.clone(), conflicts));
            }
        }
        self.params.push((name, access));
        Ok(())
    }

    /// Adds another system's access wholesale (run conditions join their system's access).
    pub fn absorb(&mut self, other: &SystemAccess) {
        self.params.extend(other.params.iter().cloned());
        self.ordering.extend(other.ordering.iter().cloned());
        self.reads_all |= other.reads_all;
        self.exclusive |= other.exclusive;
        self.deferred |= other.deferred;
    }

    /// Why the two systems may not run at the same time, in words (`None` when they may):
    /// the components or resources both touch, one writing, or the blunt access that rules
    /// it out. `name` names a component id.
    pub fn conflict_reason(
        &self,
        other: &SystemAccess,
        name: impl Fn(tabula_core::ComponentId) -> String,
    ) -> Option<String> {
        if let Some(blunt) = self.blunt_conflict(other) {
            return Some(blunt.to_string());
        }
        let mut ids: Vec<tabula_core::ComponentId> = self
            .data()
            .flat_map(|a| other.data().flat_map(move |b| a.conflicts(b)))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        (!ids.is_empty()).then(|| {
            let names: Vec<String> = ids.into_iter().map(|id| format!("`{}`", name(id))).collect();
            format!("data conflict on {}", names.join(", "))
        })
    }

    /// True when the two systems may not run at the same time.
    pub fn conflicts_with(&self, other: &SystemAccess) -> bool {
        self.blunt_conflict(other).is_some()
            || self
                .data()
                .any(|a| other.data().any(|b| !a.conflicts(b).is_empty()))
    }

    /// The conflict that needs no comparison of parameters, if there is one: an exclusive
    /// side, or a `&World` reader beside a writer.
    fn blunt_conflict(&self, other: &SystemAccess) -> Option<&'static str> {
        if self.exclusive || other.exclusive {
            Some("exclusive access (`&mut World` or a sync point)")
        } else if (self.reads_all && other.writes_anything()) || (other.reads_all && self.writes_anything()) {
            Some("`&World` reads everything the other writes")
        } else {
            None
        }
    }

    /// Every component access, parameters' and ordering ones alike.
    pub(crate) fn data(&self) -> impl Iterator<Item = &Access> {
        self.params.iter().chain(&self.ordering).map(|(_, access)| access)
    }
}
