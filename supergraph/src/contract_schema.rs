//! A contract's API schema: the catalog's API schema with every member the contract hides
//! removed, so that introspection and validation for a tenant see exactly what its searches
//! and definitions see.
//!
//! Flow: [`Contract`] visibility (decided over catalog members) -> removals from a copy of the
//! API schema (types, fields, arguments, input fields, enum values, directives) -> references to
//! removed types dropped (interfaces implemented, union members, root operations) -> validated.
//! A schema that does not validate is an error naming the contract's problems, never served.

use std::collections::HashSet;

use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Schema};

use crate::catalog::Catalog;
use crate::contract::Contract;
use crate::member::{Member, MemberKind};

/// The contract's schema is not a valid GraphQL schema.
#[derive(Debug, thiserror::Error)]
#[error("the contract's API schema is invalid: {0}")]
pub struct ContractSchemaError(pub String);

impl Contract {
    /// The catalog's API schema without the members this contract hides.
    pub fn api_schema(&self, catalog: &Catalog) -> Result<Valid<Schema>, ContractSchemaError> {
        let mut schema = catalog.api_schema().as_ref().clone().into_inner();
        for member in catalog.members() {
            if !self.is_visible(member.id) && !member.builtin {
                remove(&mut schema, catalog, member);
            }
        }
        let present: HashSet<Name> = schema.types.keys().cloned().collect();
        for ty in schema.types.values_mut() {
            match ty {
                ExtendedType::Object(object) => object
                    .make_mut()
                    .implements_interfaces
                    .retain(|i| present.contains(&i.name)),
                ExtendedType::Interface(interface) => interface
                    .make_mut()
                    .implements_interfaces
                    .retain(|i| present.contains(&i.name)),
                ExtendedType::Union(union) => union
                    .make_mut()
                    .members
                    .retain(|m| present.contains(&m.name)),
                _ => {}
            }
        }
        let roots = schema.schema_definition.make_mut();
        for root in [&mut roots.mutation, &mut roots.subscription] {
            if root.as_ref().is_some_and(|r| !present.contains(&r.name)) {
                *root = None;
            }
        }
        schema
            .validate()
            .map_err(|invalid| ContractSchemaError(invalid.errors.to_string()))
    }
}

/// Removes `member` from `schema`, if its container is still there.
fn remove(schema: &mut Schema, catalog: &Catalog, member: &Member) {
    let parent = member.parent.map(|p| catalog.member(p));
    match member.kind {
        kind if kind.is_type() => {
            schema.types.shift_remove(member.name.as_str());
        }
        MemberKind::Directive => {
            schema
                .directive_definitions
                .shift_remove(member.name.as_str());
        }
        MemberKind::DirectiveArgument => {
            if let Some(directive) =
                parent.and_then(|d| schema.directive_definitions.get_mut(d.name.as_str()))
            {
                directive
                    .make_mut()
                    .arguments
                    .retain(|a| a.name.as_str() != member.name);
            }
        }
        MemberKind::Field | MemberKind::InputField => {
            let Some(ty) = parent.and_then(|p| schema.types.get_mut(p.name.as_str())) else {
                return;
            };
            match ty {
                ExtendedType::Object(o) => {
                    o.make_mut().fields.shift_remove(member.name.as_str());
                }
                ExtendedType::Interface(i) => {
                    i.make_mut().fields.shift_remove(member.name.as_str());
                }
                ExtendedType::InputObject(i) => {
                    i.make_mut().fields.shift_remove(member.name.as_str());
                }
                _ => {}
            }
        }
        MemberKind::EnumValue => {
            if let Some(ExtendedType::Enum(e)) =
                parent.and_then(|p| schema.types.get_mut(p.name.as_str()))
            {
                e.make_mut().values.shift_remove(member.name.as_str());
            }
        }
        MemberKind::Argument => {
            let Some(field) = parent else { return };
            let Some(ty) = field
                .parent
                .and_then(|t| schema.types.get_mut(catalog.member(t).name.as_str()))
            else {
                return;
            };
            let fields = match ty {
                ExtendedType::Object(o) => &mut o.make_mut().fields,
                ExtendedType::Interface(i) => &mut i.make_mut().fields,
                _ => return,
            };
            if let Some(field) = fields.get_mut(field.name.as_str()) {
                field
                    .make_mut()
                    .arguments
                    .retain(|a| a.name.as_str() != member.name);
            }
        }
        _ => {}
    }
}
