//! Schema definitions as introspection objects (`__Type`, `__Field`, `__InputValue`,
//! `__EnumValue`, `__Directive`), resolved with full introspection semantics (`ofType` chains,
//! `args`, `fields(includeDeprecated:)`, `possibleTypes`, ...) over one catalog's API schema,
//! seen through a tenant's contract: a member the contract hides is left out of every list, so
//! a definition never leads to what the tenant may not see.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use apollo_compiler::resolvers::{FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use apollo_compiler::schema::{
    self, DirectiveDefinition, EnumValueDefinition, ExtendedType, FieldDefinition,
    InputValueDefinition,
};
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Node, Schema};
use lru::LruCache;
use wayfinder_supergraph::{Catalog, Example, Member, MemberId, MemberKind, NoExample};
use wayfinder_workers::index::visibility::Visibility;
use wayfinder_workers::learned::{Learned, LearnedExample};

/// One catalog's schema as one tenant sees it.
#[derive(Clone)]
pub struct Scope {
    pub catalog: Arc<Catalog>,
    /// What the tenant's contract lets it see.
    pub visibility: Visibility,
    /// Examples learned from traffic, served before the made ones.
    pub learned: Option<Arc<Learned>>,
    /// The examples made for this catalog and view so far.
    pub made: Arc<MadeExamples>,
}

/// Made examples kept per view of a catalog.
const MADE_EXAMPLES_KEPT: usize = 4096;

/// The examples made from the schema for one catalog and one view, as requests ask for them:
/// making one walks the member's paths and writes its text, the same each time, which costs
/// a search that shows its hits' examples more than reading it back. The most recently asked
/// are kept (at most [`MADE_EXAMPLES_KEPT`]); the plugin instance, one per catalog, holds one
/// per tenant.
pub struct MadeExamples(Mutex<LruCache<MemberId, Result<Arc<Example>, NoExample>>>);

impl Default for MadeExamples {
    fn default() -> Self {
        let kept = NonZeroUsize::new(MADE_EXAMPLES_KEPT).unwrap_or(NonZeroUsize::MIN);
        MadeExamples(Mutex::new(LruCache::new(kept)))
    }
}

impl MadeExamples {
    fn get_or_make(
        &self,
        member: MemberId,
        make: impl FnOnce() -> Result<Example, NoExample>,
    ) -> Result<Arc<Example>, NoExample> {
        let lock = || self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(made) = lock().get(&member) {
            return made.clone();
        }
        // Made outside the lock: two requests may make one twice, never wait on each other.
        let made = make().map(Arc::new);
        lock().put(member, made.clone());
        made
    }
}

impl Scope {
    fn schema(&self) -> &Valid<Schema> {
        self.catalog.api_schema()
    }

    /// Whether the tenant sees the member at `coordinate`. What the catalog does not list
    /// (the introspection types themselves) is always visible.
    pub fn visible(&self, coordinate: &str) -> bool {
        self.catalog
            .get(coordinate)
            .is_none_or(|member| self.visibility.allows(member.id))
    }

    /// The member at `coordinate`, if the tenant sees it.
    pub fn member(&self, coordinate: &str) -> Option<&Member> {
        let member = self.catalog.get(coordinate)?;
        self.visibility.allows(member.id).then_some(member)
    }

    /// The definition a catalog member stands for.
    pub fn definition<'a>(&'a self, member: &Member) -> Option<ResolvedValue<'a>> {
        let container = |member: &Member| member.parent.map(|id| self.catalog.member(id));
        let type_def = |name: &str| self.schema().types.get(name);
        Some(match member.kind {
            kind if kind.is_type() => {
                ResolvedValue::object(TypeDef::new(self, type_def(&member.name)?))
            }
            MemberKind::Field => {
                let parent = container(member)?;
                let def = fields_of(type_def(&parent.name)?)?.get(member.name.as_str())?;
                ResolvedValue::object(FieldDef {
                    scope: self,
                    parent: parent.name.as_str().into(),
                    def,
                })
            }
            MemberKind::Argument => {
                let field = container(member)?;
                let parent = container(field)?;
                let def = fields_of(type_def(&parent.name)?)?.get(field.name.as_str())?;
                let arg = def
                    .arguments
                    .iter()
                    .find(|a| a.name == member.name.as_str())?;
                ResolvedValue::object(InputValue {
                    scope: self,
                    owner: Owner::Field(parent.name.as_str(), field.name.as_str()),
                    def: arg,
                })
            }
            MemberKind::InputField => {
                let parent = container(member)?;
                let ExtendedType::InputObject(input) = type_def(&parent.name)? else {
                    return None;
                };
                let def = input.fields.get(member.name.as_str())?;
                ResolvedValue::object(InputValue {
                    scope: self,
                    owner: Owner::InputObject(parent.name.as_str()),
                    def,
                })
            }
            MemberKind::EnumValue => {
                let parent = container(member)?;
                let ExtendedType::Enum(enum_def) = type_def(&parent.name)? else {
                    return None;
                };
                let def = enum_def.values.get(member.name.as_str())?;
                ResolvedValue::object(EnumValue {
                    scope: self,
                    parent: parent.name.as_str(),
                    def,
                })
            }
            MemberKind::Directive => {
                let def = self
                    .schema()
                    .directive_definitions
                    .get(member.name.as_str())?;
                ResolvedValue::object(Directive { scope: self, def })
            }
            MemberKind::DirectiveArgument => {
                let directive = container(member)?;
                let def = self
                    .schema()
                    .directive_definitions
                    .get(directive.name.as_str())?;
                let arg = def
                    .arguments
                    .iter()
                    .find(|a| a.name == member.name.as_str())?;
                ResolvedValue::object(InputValue {
                    scope: self,
                    owner: Owner::Directive(directive.name.as_str()),
                    def: arg,
                })
            }
            _ => return None,
        })
    }

    /// The examples of the member at `coordinate`, as the tenant may see them: the most used
    /// learned ones that touch only what it sees, then the one made from the schema.
    pub fn examples_of(&self, coordinate: &str) -> Vec<Example> {
        let Some(member) = self.member(coordinate) else {
            return Vec::new();
        };
        let mut examples: Vec<Example> = self
            .learned
            .iter()
            .flat_map(|learned| learned.examples(coordinate, &|c| self.member(c).is_some()))
            .map(|learned| learned_example(&learned))
            .collect();
        examples.extend(self.made_example(member.id));
        examples
    }

    /// The example made from the schema for `member` in this view.
    fn made_example(&self, member: MemberId) -> Option<Example> {
        let made = self
            .made
            .get_or_make(member, || self.visibility.example(&self.catalog, member));
        made.ok().map(|example| (*example).clone())
    }

    /// The first of [`Scope::examples_of`], made only when no learned one is served.
    pub fn best_example(&self, coordinate: &str) -> Option<Example> {
        let member = self.member(coordinate)?;
        let learned = self.learned.as_ref().and_then(|learned| {
            let visible = |c: &str| self.member(c).is_some();
            learned.examples(coordinate, &visible).into_iter().next()
        });
        match learned {
            Some(learned) => Some(learned_example(&learned)),
            None => self.made_example(member.id),
        }
    }

    fn examples<'v>(&self, coordinate: &str) -> ResolvedValue<'v> {
        ResolvedValue::list(
            self.examples_of(coordinate)
                .into_iter()
                .map(|example| ResolvedValue::object(ExampleValue(example))),
        )
    }

    /// A prompt's argument, an `__InputValue` of no schema member (no examples).
    pub fn prompt_argument<'a>(&'a self, def: &'a Node<InputValueDefinition>) -> ResolvedValue<'a> {
        ResolvedValue::object(InputValue {
            scope: self,
            owner: Owner::Prompt,
            def,
        })
    }

    fn named_type<'a>(&'a self, name: &str) -> ResolvedValue<'a> {
        ResolvedValue::nullable_object(
            self.schema()
                .types
                .get(name)
                .map(|def| TypeDef::new(self, def)),
        )
    }

    fn type_ref<'a>(&'a self, ty: &'a schema::Type) -> ResolvedValue<'a> {
        match ty {
            schema::Type::Named(name) => self.named_type(name),
            _ => ResolvedValue::object(Wrapper {
                scope: self,
                ty: Cow::Borrowed(ty),
            }),
        }
    }

    fn types<'a, I>(&'a self, names: I) -> ResolvedValue<'a>
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: 'a,
    {
        ResolvedValue::list(names.into_iter().filter_map(move |name| {
            let def = self.schema().types.get(name)?;
            self.visible(name)
                .then(|| ResolvedValue::object(TypeDef::new(self, def)))
        }))
    }
}

fn learned_example(learned: &LearnedExample) -> Example {
    Example {
        operation: learned.operation.to_string(),
        description: match learned.this_week {
            1 => "Seen once this week.".to_string(),
            n => format!("Seen {} times this week.", thousands(n)),
        },
    }
}

/// `1240` as `1,240`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A coordinate as written, read without its whitespace (`Query.book(isbn: )`).
pub fn normalized(coordinate: &str) -> String {
    coordinate.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The fields of an object or interface type.
pub fn fields_of(
    def: &ExtendedType,
) -> Option<
    &apollo_compiler::collections::IndexMap<
        Name,
        apollo_compiler::schema::Component<FieldDefinition>,
    >,
> {
    match def {
        ExtendedType::Object(def) => Some(&def.fields),
        ExtendedType::Interface(def) => Some(&def.fields),
        _ => None,
    }
}

fn include_deprecated(info: &ResolveInfo<'_>) -> bool {
    matches!(
        info.arguments().get("includeDeprecated"),
        Some(serde_json_bytes::Value::Bool(true))
    )
}

fn is_deprecated(directives: &apollo_compiler::ast::DirectiveList) -> bool {
    directives.get("deprecated").is_some()
}

fn deprecation_reason<'a>(
    scope: &Scope,
    directives: &'a apollo_compiler::ast::DirectiveList,
) -> ResolvedValue<'a> {
    ResolvedValue::leaf(
        directives
            .get("deprecated")
            .and_then(|d| d.argument_by_name("reason", scope.schema()).ok())
            .and_then(|v| v.as_str())
            .map(str::to_string),
    )
}

/// A named type.
struct TypeDef<'a> {
    scope: &'a Scope,
    def: &'a ExtendedType,
}

impl<'a> TypeDef<'a> {
    fn new(scope: &'a Scope, def: &'a ExtendedType) -> Self {
        TypeDef { scope, def }
    }
}

impl ObjectValue for TypeDef<'_> {
    fn type_name(&self) -> &str {
        "__Type"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        let scope = self.scope;
        let type_name = self.def.name().as_str();
        Ok(match info.field_name() {
            "kind" => ResolvedValue::leaf(match self.def {
                ExtendedType::Scalar(_) => "SCALAR",
                ExtendedType::Object(_) => "OBJECT",
                ExtendedType::Interface(_) => "INTERFACE",
                ExtendedType::Union(_) => "UNION",
                ExtendedType::Enum(_) => "ENUM",
                ExtendedType::InputObject(_) => "INPUT_OBJECT",
            }),
            "name" => ResolvedValue::leaf(type_name),
            "description" => ResolvedValue::leaf(self.def.description().map(|d| d.as_str())),
            "fields" => {
                let Some(fields) = fields_of(self.def) else {
                    return Ok(ResolvedValue::null());
                };
                let with_deprecated = include_deprecated(info);
                ResolvedValue::list(
                    fields
                        .values()
                        .filter(move |def| with_deprecated || !is_deprecated(&def.directives))
                        .filter(move |def| scope.visible(&format!("{type_name}.{}", def.name)))
                        .map(move |def| {
                            ResolvedValue::object(FieldDef {
                                scope,
                                parent: type_name.into(),
                                def,
                            })
                        }),
                )
            }
            "interfaces" => match self.def {
                ExtendedType::Object(def) => {
                    scope.types(def.implements_interfaces.iter().map(|c| c.name.as_str()))
                }
                ExtendedType::Interface(def) => {
                    scope.types(def.implements_interfaces.iter().map(|c| c.name.as_str()))
                }
                _ => ResolvedValue::null(),
            },
            // The catalog already knows each abstract type's possible types (an interface's
            // implementers, a union's members), in schema order.
            "possibleTypes" => match self.def {
                ExtendedType::Interface(_) | ExtendedType::Union(_) => {
                    let catalog = &scope.catalog;
                    let possible = catalog
                        .get(type_name)
                        .map(|member| member.possible_types.as_slice())
                        .unwrap_or_default();
                    scope.types(possible.iter().map(|id| catalog.member(*id).name.as_str()))
                }
                _ => ResolvedValue::null(),
            },
            "enumValues" => {
                let ExtendedType::Enum(def) = self.def else {
                    return Ok(ResolvedValue::null());
                };
                let with_deprecated = include_deprecated(info);
                ResolvedValue::list(
                    def.values
                        .values()
                        .filter(move |def| with_deprecated || !is_deprecated(&def.directives))
                        .filter(move |def| scope.visible(&format!("{type_name}.{}", def.value)))
                        .map(move |def| {
                            ResolvedValue::object(EnumValue {
                                scope,
                                parent: type_name,
                                def,
                            })
                        }),
                )
            }
            "inputFields" => {
                let ExtendedType::InputObject(def) = self.def else {
                    return Ok(ResolvedValue::null());
                };
                let with_deprecated = include_deprecated(info);
                ResolvedValue::list(
                    def.fields
                        .values()
                        .filter(move |def| with_deprecated || !is_deprecated(&def.directives))
                        .filter(move |def| scope.visible(&format!("{type_name}.{}", def.name)))
                        .map(move |def| {
                            ResolvedValue::object(InputValue {
                                scope,
                                owner: Owner::InputObject(type_name),
                                def,
                            })
                        }),
                )
            }
            "ofType" => ResolvedValue::null(),
            "specifiedByURL" => {
                let ExtendedType::Scalar(def) = self.def else {
                    return Ok(ResolvedValue::null());
                };
                ResolvedValue::leaf(
                    def.directives
                        .get("specifiedBy")
                        .and_then(|d| d.specified_argument_by_name("url"))
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                )
            }
            "isOneOf" => ResolvedValue::leaf(match self.def {
                ExtendedType::InputObject(def) => def.directives.get("oneOf").is_some(),
                _ => false,
            }),
            "examples" => scope.examples(type_name),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

/// A list or non-null type.
struct Wrapper<'a> {
    scope: &'a Scope,
    ty: Cow<'a, schema::Type>,
}

impl ObjectValue for Wrapper<'_> {
    fn type_name(&self) -> &str {
        "__Type"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "kind" => ResolvedValue::leaf(match &*self.ty {
                schema::Type::List(_) => "LIST",
                _ => "NON_NULL",
            }),
            "ofType" => match &*self.ty {
                schema::Type::Named(name) | schema::Type::NonNullNamed(name) => {
                    self.scope.named_type(name)
                }
                schema::Type::List(inner) => self.scope.type_ref(inner),
                schema::Type::NonNullList(inner) => ResolvedValue::object(Wrapper {
                    scope: self.scope,
                    ty: Cow::Owned(schema::Type::List(inner.clone())),
                }),
            },
            "name" | "description" | "fields" | "interfaces" | "possibleTypes" | "enumValues"
            | "inputFields" | "specifiedByURL" | "isOneOf" | "examples" => ResolvedValue::null(),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

struct FieldDef<'a> {
    scope: &'a Scope,
    parent: Cow<'a, str>,
    def: &'a Node<FieldDefinition>,
}

impl ObjectValue for FieldDef<'_> {
    fn type_name(&self) -> &str {
        "__Field"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        let scope = self.scope;
        Ok(match info.field_name() {
            "name" => ResolvedValue::leaf(self.def.name.as_str()),
            "description" => ResolvedValue::leaf(self.def.description.as_deref()),
            "args" => {
                let with_deprecated = include_deprecated(info);
                let field = format!("{}.{}", self.parent, self.def.name);
                let parent = &*self.parent;
                let name = self.def.name.as_str();
                ResolvedValue::list(
                    self.def
                        .arguments
                        .iter()
                        .filter(move |def| with_deprecated || !is_deprecated(&def.directives))
                        .filter(move |def| scope.visible(&format!("{field}({}:)", def.name)))
                        .map(move |def| {
                            ResolvedValue::object(InputValue {
                                scope,
                                owner: Owner::Field(parent, name),
                                def,
                            })
                        }),
                )
            }
            "type" => scope.type_ref(&self.def.ty),
            "isDeprecated" => ResolvedValue::leaf(is_deprecated(&self.def.directives)),
            "deprecationReason" => deprecation_reason(scope, &self.def.directives),
            "examples" => scope.examples(&format!("{}.{}", self.parent, self.def.name)),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

struct InputValue<'a> {
    scope: &'a Scope,
    owner: Owner<'a>,
    def: &'a Node<InputValueDefinition>,
}

/// What an input value belongs to, for its coordinate.
#[derive(Clone, Copy)]
enum Owner<'a> {
    /// A field's argument: the type and the field.
    Field(&'a str, &'a str),
    InputObject(&'a str),
    Directive(&'a str),
    /// A prompt's argument: no coordinate.
    Prompt,
}

impl Owner<'_> {
    fn coordinate(self, name: &str) -> Option<String> {
        Some(match self {
            Owner::Field(ty, field) => format!("{ty}.{field}({name}:)"),
            Owner::InputObject(ty) => format!("{ty}.{name}"),
            Owner::Directive(directive) => format!("@{directive}({name}:)"),
            Owner::Prompt => return None,
        })
    }
}

impl ObjectValue for InputValue<'_> {
    fn type_name(&self) -> &str {
        "__InputValue"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "name" => ResolvedValue::leaf(self.def.name.as_str()),
            "description" => ResolvedValue::leaf(self.def.description.as_deref()),
            "type" => self.scope.type_ref(&self.def.ty),
            "defaultValue" => ResolvedValue::leaf(
                self.def
                    .default_value
                    .as_ref()
                    .map(|value| value.serialize().no_indent().to_string()),
            ),
            "isDeprecated" => ResolvedValue::leaf(is_deprecated(&self.def.directives)),
            "deprecationReason" => deprecation_reason(self.scope, &self.def.directives),
            "examples" => match self.owner.coordinate(self.def.name.as_str()) {
                Some(coordinate) => self.scope.examples(&coordinate),
                None => ResolvedValue::null(),
            },
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

struct EnumValue<'a> {
    scope: &'a Scope,
    /// The enum type's name.
    parent: &'a str,
    def: &'a Node<EnumValueDefinition>,
}

impl ObjectValue for EnumValue<'_> {
    fn type_name(&self) -> &str {
        "__EnumValue"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "name" => ResolvedValue::leaf(self.def.value.as_str()),
            "description" => ResolvedValue::leaf(self.def.description.as_deref()),
            "isDeprecated" => ResolvedValue::leaf(is_deprecated(&self.def.directives)),
            "deprecationReason" => deprecation_reason(self.scope, &self.def.directives),
            "examples" => self
                .scope
                .examples(&format!("{}.{}", self.parent, self.def.value)),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

struct Directive<'a> {
    scope: &'a Scope,
    def: &'a Node<DirectiveDefinition>,
}

impl ObjectValue for Directive<'_> {
    fn type_name(&self) -> &str {
        "__Directive"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        let scope = self.scope;
        Ok(match info.field_name() {
            "name" => ResolvedValue::leaf(self.def.name.as_str()),
            "description" => ResolvedValue::leaf(self.def.description.as_deref()),
            "args" => {
                let with_deprecated = include_deprecated(info);
                let directive = self.def.name.as_str();
                ResolvedValue::list(
                    self.def
                        .arguments
                        .iter()
                        .filter(move |def| with_deprecated || !is_deprecated(&def.directives))
                        .filter(move |def| scope.visible(&format!("@{directive}({}:)", def.name)))
                        .map(move |def| {
                            ResolvedValue::object(InputValue {
                                scope,
                                owner: Owner::Directive(directive),
                                def,
                            })
                        }),
                )
            }
            "locations" => ResolvedValue::list(
                self.def
                    .locations
                    .iter()
                    .map(|location| ResolvedValue::leaf(location.name())),
            ),
            "isRepeatable" => ResolvedValue::leaf(self.def.repeatable),
            "examples" => scope.examples(&format!("@{}", self.def.name)),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

/// One `__Example`.
struct ExampleValue(Example);

impl ObjectValue for ExampleValue {
    fn type_name(&self) -> &str {
        "__Example"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "operation" => ResolvedValue::leaf(self.0.operation.as_str()),
            "description" => ResolvedValue::leaf(self.0.description.as_str()),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}
