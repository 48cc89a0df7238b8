//! Building a rule set in code: collects settings and [`RuleDecl`]s.
//!
//! Invariant: the builder checks nothing itself: `build` validates through [`Rules::from_decl`],
//! the path the TOML loader takes too, so both refuse the same things with the same messages.

use kernel_families::Families;

use crate::rules::{
    ElementDecl, RuleDecl, Rules, RulesDecl, RulesError, SettingDecl, SettingValue,
};

/// Collects settings and rules and builds validated [`Rules`].
///
/// ```
/// use fuser::{RulesBuilder, rules::{ElementDecl, RuleDecl}};
///
/// let mut b = RulesBuilder::new("my rules");
/// b.setting("mode", "prefill").rule(
///     RuleDecl::new("norm_gemv", "cuda")
///         .element(ElementDecl::op("rms_norm"))
///         .element(ElementDecl::op("linear").node("q_*"))
///         .kernels(["rmsnorm_gemv_bf16"])
///         .rows(1, 16)
///         .when("mode", "decode")
///         .priority(100),
/// );
/// let rules = b.build(None).unwrap();
/// assert_eq!(rules.rules()[0].rows, (1, 16));
/// ```
#[derive(Debug, Clone)]
pub struct RulesBuilder {
    origin: String,
    decl: RulesDecl,
}

impl RulesBuilder {
    /// An empty rule set; errors name `origin`.
    pub fn new(origin: impl Into<String>) -> RulesBuilder {
        RulesBuilder {
            origin: origin.into(),
            decl: RulesDecl {
                schema: 1,
                settings: Default::default(),
                rules: Vec::new(),
            },
        }
    }

    /// Declares a setting rules may read, with its default.
    pub fn setting(
        &mut self,
        key: impl Into<String>,
        default: impl Into<String>,
    ) -> &mut RulesBuilder {
        self.decl
            .settings
            .insert(key.into(), SettingDecl::new(default));
        self
    }

    /// Declares a setting with its default and every value it may take.
    pub fn setting_values<S: Into<String>>(
        &mut self,
        key: impl Into<String>,
        default: impl Into<String>,
        values: impl IntoIterator<Item = S>,
    ) -> &mut RulesBuilder {
        let values = values.into_iter().map(|v| SettingValue(v.into())).collect();
        self.decl.settings.insert(
            key.into(),
            SettingDecl {
                default: SettingValue(default.into()),
                values,
            },
        );
        self
    }

    /// Appends a rule.
    pub fn rule(&mut self, rule: RuleDecl) -> &mut RulesBuilder {
        self.decl.rules.push(rule);
        self
    }

    /// The declarations collected so far.
    pub fn decl(&self) -> &RulesDecl {
        &self.decl
    }

    /// Validates and builds the rules; with a `registry`, every kernel must be listed by one of
    /// its families.
    pub fn build(&self, registry: Option<&Families>) -> Result<Rules, RulesError> {
        Rules::from_decl(self.decl.clone(), &self.origin, registry)
    }
}

impl RuleDecl {
    /// A rule `id` whose groups are emitted by `emitter`, with an empty pattern, no kernels, all
    /// row counts, no conditions and priority 0.
    pub fn new(id: impl Into<String>, emitter: impl Into<String>) -> RuleDecl {
        RuleDecl {
            id: id.into(),
            pattern: Vec::new(),
            kernels: Vec::new(),
            emitter: emitter.into(),
            rows: None,
            when: Default::default(),
            priority: 0,
        }
    }

    /// Appends a pattern element.
    pub fn element(mut self, element: ElementDecl) -> RuleDecl {
        self.pattern.push(element);
        self
    }

    /// Appends kernels.
    pub fn kernels<S: Into<String>>(mut self, kernels: impl IntoIterator<Item = S>) -> RuleDecl {
        self.kernels.extend(kernels.into_iter().map(Into::into));
        self
    }

    /// Applies only when `lo <= n <= hi`.
    pub fn rows(mut self, lo: u64, hi: u64) -> RuleDecl {
        self.rows = Some([lo, hi]);
        self
    }

    /// Applies only when setting `key` is `value`.
    pub fn when(mut self, key: impl Into<String>, value: impl Into<String>) -> RuleDecl {
        self.when.insert(key.into(), SettingValue(value.into()));
        self
    }

    /// Sets the priority (higher claims first).
    pub fn priority(mut self, priority: i64) -> RuleDecl {
        self.priority = priority;
        self
    }
}

impl ElementDecl {
    /// An element matching nodes running `op`.
    pub fn op(op: impl Into<String>) -> ElementDecl {
        ElementDecl {
            op: op.into(),
            node: None,
            keep: false,
        }
    }

    /// Only nodes whose local id matches `glob` (`*`, `?`).
    pub fn node(mut self, glob: impl Into<String>) -> ElementDecl {
        self.node = Some(glob.into());
        self
    }

    /// The element's outputs may be read outside the group.
    pub fn keep(mut self) -> ElementDecl {
        self.keep = true;
        self
    }
}
