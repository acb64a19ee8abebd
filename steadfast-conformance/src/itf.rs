//! Values in the Informal Trace Format (ITF, Apalache ADR-015), as Quint writes them.
//!
//! [`encode`] is a serde serializer, so it sees Rust's types: integers become
//! `{"#bigint": "n"}`, tuples `{"#tup": [..]}`, maps `{"#map": [[k, v], ..]}`, structs
//! records (JSON objects), sequences lists (JSON arrays), and enums and options Quint's
//! variants `{"tag": .., "value": ..}`: `None` is `{"tag": "None", "value": {}}` as Quint
//! writes it, a unit variant carries the empty tuple, `Some(x)` and a newtype variant
//! carry `x`, tuple and struct variants a tuple or a record.
//!
//! [`decode`] maps an ITF value back to the shape `serde_json` gives the same Rust value,
//! so that `serde_json::from_value` can read our types from ITF files.

use serde::ser::{self, Serialize};
use serde_json::{json, Map, Value};
use std::fmt;

/// An error while encoding or decoding a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItfError(pub String);

impl fmt::Display for ItfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ItfError {}

impl ser::Error for ItfError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ItfError(msg.to_string())
    }
}

/// Encodes a value as ITF.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Value, ItfError> {
    value.serialize(Encoder)
}

fn bigint(n: impl fmt::Display) -> Value {
    json!({ "#bigint": n.to_string() })
}

fn variant(tag: &str, value: Value) -> Value {
    json!({ "tag": tag, "value": value })
}

fn unit() -> Value {
    json!({ "#tup": [] })
}

struct Encoder;

/// Collects the elements of a sequence, tuple or variant.
struct Elements {
    items: Vec<Value>,
    wrap: fn(Vec<Value>) -> Value,
    tag: Option<&'static str>,
}

impl Elements {
    fn finish(self) -> Value {
        let inner = (self.wrap)(self.items);
        match self.tag {
            Some(tag) => variant(tag, inner),
            None => inner,
        }
    }
}

fn list(items: Vec<Value>) -> Value {
    Value::Array(items)
}

fn tuple(items: Vec<Value>) -> Value {
    json!({ "#tup": items })
}

/// Collects the fields of a struct or struct variant.
struct Fields {
    record: Map<String, Value>,
    tag: Option<&'static str>,
}

/// Collects the entries of a map.
struct Entries {
    entries: Vec<Value>,
    key: Option<Value>,
}

macro_rules! ints {
    ($($method:ident: $t:ty),*) => {
        $(fn $method(self, v: $t) -> Result<Value, ItfError> { Ok(bigint(v)) })*
    };
}

impl ser::Serializer for Encoder {
    type Ok = Value;
    type Error = ItfError;
    type SerializeSeq = Elements;
    type SerializeTuple = Elements;
    type SerializeTupleStruct = Elements;
    type SerializeTupleVariant = Elements;
    type SerializeMap = Entries;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Fields;

    fn serialize_bool(self, v: bool) -> Result<Value, ItfError> {
        Ok(Value::Bool(v))
    }
    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
          serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
          serialize_u64: u64, serialize_u128: u128);
    fn serialize_f32(self, v: f32) -> Result<Value, ItfError> {
        self.serialize_f64(v as f64)
    }
    fn serialize_f64(self, v: f64) -> Result<Value, ItfError> {
        Ok(json!({ "#unserializable": v.to_string() }))
    }
    fn serialize_char(self, v: char) -> Result<Value, ItfError> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, ItfError> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, ItfError> {
        Ok(Value::Array(v.iter().map(bigint).collect()))
    }
    fn serialize_none(self) -> Result<Value, ItfError> {
        Ok(variant("None", json!({})))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, ItfError> {
        Ok(variant("Some", value.serialize(Encoder)?))
    }
    fn serialize_unit(self) -> Result<Value, ItfError> {
        Ok(unit())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, ItfError> {
        Ok(unit())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
    ) -> Result<Value, ItfError> {
        Ok(variant(name, unit()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value, ItfError> {
        value.serialize(Encoder)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        value: &T,
    ) -> Result<Value, ItfError> {
        Ok(variant(name, value.serialize(Encoder)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Elements, ItfError> {
        Ok(Elements {
            items: Vec::with_capacity(len.unwrap_or(0)),
            wrap: list,
            tag: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Elements, ItfError> {
        Ok(Elements {
            items: Vec::with_capacity(len),
            wrap: tuple,
            tag: None,
        })
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Elements, ItfError> {
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        len: usize,
    ) -> Result<Elements, ItfError> {
        Ok(Elements {
            items: Vec::with_capacity(len),
            wrap: tuple,
            tag: Some(name),
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Entries, ItfError> {
        Ok(Entries {
            entries: Vec::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, ItfError> {
        Ok(Fields {
            record: Map::new(),
            tag: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        _: usize,
    ) -> Result<Fields, ItfError> {
        Ok(Fields {
            record: Map::new(),
            tag: Some(name),
        })
    }
}

impl Elements {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        self.items.push(value.serialize(Encoder)?);
        Ok(())
    }
}

impl ser::SerializeSeq for Elements {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTuple for Elements {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleStruct for Elements {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleVariant for Elements {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

impl ser::SerializeMap for Entries {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ItfError> {
        self.key = Some(key.serialize(Encoder)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ItfError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| ItfError("map value without a key".into()))?;
        self.entries
            .push(Value::Array(vec![key, value.serialize(Encoder)?]));
        Ok(())
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(json!({ "#map": self.entries }))
    }
}

impl Fields {
    fn put<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), ItfError> {
        self.record
            .insert(key.to_string(), value.serialize(Encoder)?);
        Ok(())
    }
    fn finish(self) -> Value {
        let record = Value::Object(self.record);
        match self.tag {
            Some(tag) => variant(tag, record),
            None => record,
        }
    }
}

impl ser::SerializeStruct for Fields {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), ItfError> {
        self.put(key, value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

impl ser::SerializeStructVariant for Fields {
    type Ok = Value;
    type Error = ItfError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), ItfError> {
        self.put(key, value)
    }
    fn end(self) -> Result<Value, ItfError> {
        Ok(self.finish())
    }
}

/// Maps an ITF value to the JSON shape serde_json uses for the same Rust value.
pub fn decode(value: &Value) -> Result<Value, ItfError> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(o) => {
            if let Some(n) = o.get("#bigint") {
                let text = n
                    .as_str()
                    .ok_or_else(|| ItfError(format!("#bigint is not a string: {n}")))?;
                return text
                    .parse::<i128>()
                    .ok()
                    .and_then(serde_json::Number::from_i128)
                    .map(Value::Number)
                    .ok_or_else(|| ItfError(format!("#bigint `{text}` is not an integer we use")));
            }
            if let Some(items) = o.get("#tup").or_else(|| o.get("#set")) {
                let items = items
                    .as_array()
                    .ok_or_else(|| ItfError(format!("#tup/#set is not a list: {items}")))?;
                return items
                    .iter()
                    .map(decode)
                    .collect::<Result<_, _>>()
                    .map(Value::Array);
            }
            if let Some(entries) = o.get("#map") {
                let entries = entries
                    .as_array()
                    .ok_or_else(|| ItfError(format!("#map is not a list: {entries}")))?;
                let mut map = Map::new();
                for entry in entries {
                    let pair = entry.as_array().filter(|p| p.len() == 2).ok_or_else(|| {
                        ItfError(format!("#map entry is not a [key, value] pair: {entry}"))
                    })?;
                    let key = match decode(&pair[0])? {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        other => return Err(ItfError(format!("#map key we cannot read: {other}"))),
                    };
                    map.insert(key, decode(&pair[1])?);
                }
                return Ok(Value::Object(map));
            }
            if let (Some(tag), Some(inner), 2) = (o.get("tag"), o.get("value"), o.len()) {
                let tag = tag
                    .as_str()
                    .ok_or_else(|| ItfError(format!("variant tag is not a string: {tag}")))?;
                let is_empty_record = inner.as_object().is_some_and(|m| m.is_empty());
                let is_unit = inner == &unit();
                return Ok(match tag {
                    "None" if is_empty_record => Value::Null,
                    "Some" => decode(inner)?,
                    _ if is_unit => Value::String(tag.to_string()),
                    _ => json!({ tag: decode(inner)? }),
                });
            }
            if let Some(u) = o.get("#unserializable") {
                return Err(ItfError(format!("unserializable value: {u}")));
            }
            o.iter()
                .map(|(k, v)| decode(v).map(|v| (k.clone(), v)))
                .collect::<Result<Map<_, _>, _>>()
                .map(Value::Object)
        }
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Status {
        Finished,
        Failed,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Action {
        Grant { session: u8 },
        Revoke,
        Deliver(u8, Status),
        Complete(Option<Status>),
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct State {
        session: Option<u8>,
        results: [Option<Status>; 2],
        pair: (u8, bool),
        offsets: BTreeMap<u8, u32>,
        log: Vec<Action>,
    }

    fn sample() -> State {
        State {
            session: Some(3),
            results: [None, Some(Status::Failed)],
            pair: (1, true),
            offsets: [(0, 7), (1, 9)].into_iter().collect(),
            log: vec![
                Action::Grant { session: 1 },
                Action::Revoke,
                Action::Deliver(1, Status::Finished),
                Action::Complete(None),
                Action::Complete(Some(Status::Failed)),
            ],
        }
    }

    #[test]
    fn encodes_with_itf_markers() {
        let v = encode(&sample()).unwrap();
        assert_eq!(
            v["session"],
            json!({"tag": "Some", "value": {"#bigint": "3"}})
        );
        // serde presents fixed-size arrays as tuples.
        assert_eq!(v["results"]["#tup"][0], json!({"tag": "None", "value": {}}));
        assert_eq!(
            v["results"]["#tup"][1],
            json!({"tag": "Some", "value": {"tag": "Failed", "value": {"#tup": []}}})
        );
        assert_eq!(v["pair"], json!({"#tup": [{"#bigint": "1"}, true]}));
        assert_eq!(
            v["offsets"],
            json!({"#map": [[{"#bigint": "0"}, {"#bigint": "7"}], [{"#bigint": "1"}, {"#bigint": "9"}]]})
        );
        assert_eq!(
            v["log"][0],
            json!({"tag": "Grant", "value": {"session": {"#bigint": "1"}}})
        );
        assert_eq!(
            v["log"][2],
            json!({"tag": "Deliver", "value": {"#tup": [{"#bigint": "1"}, {"tag": "Finished", "value": {"#tup": []}}]}})
        );
    }

    #[test]
    fn decodes_back_to_the_same_value() {
        let v = encode(&sample()).unwrap();
        let back: State = serde_json::from_value(decode(&v).unwrap()).unwrap();
        assert_eq!(back, sample());
    }

    #[test]
    fn bad_markers_are_named() {
        let e = decode(&json!({"#bigint": 5})).unwrap_err();
        assert!(e.0.contains("#bigint is not a string"), "{e}");
        let e = decode(&json!({"#map": [[1]]})).unwrap_err();
        assert!(e.0.contains("[key, value] pair"), "{e}");
    }
}
