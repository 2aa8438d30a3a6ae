//! Procedural macros for the `runtime` crate: `#[runtime::main]` and
//! `#[runtime::test]`.
//!
//! Use them through their re-exports, `runtime::main` and `runtime::test`;
//! the arguments and examples are documented there. This crate holds only
//! the expansion, which is modelled on `tokio-macros`' `entry.rs`:
//!
//! ```text
//! #[runtime::main(entries = 256)]
//! async fn main() -> Ret { body }
//! ```
//!
//! becomes, roughly,
//!
//! ```text
//! fn main() -> Ret {
//!     let body = async move { body };
//!     return ::runtime::Builder::new()
//!         .entries(256u32)
//!         .build()
//!         .expect("failed to start the runtime")
//!         .block_on(body);
//! }
//! ```
//!
//! `#[runtime::test]` expands the same way and adds
//! `#[::core::prelude::v1::test]`.
//!
//! If the item or the arguments are invalid, the macros still expand to the
//! closest valid item and append a `compile_error!`, so that IDE features
//! keep working on the function while the error is shown.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream, Parser};
use syn::{braced, Attribute, Path, Signature, Visibility};

/// # Definition
///
/// `#[runtime::main]` is defined in the `corering-macros` crate, which only
/// implements the expansion. Use it through its re-export `runtime::main`;
/// its arguments and examples are documented in the `runtime` crate.
#[proc_macro_attribute]
pub fn main(
    args: proc_macro::TokenStream,
    item: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    entry(args.into(), item.into(), Kind::Main).into()
}

/// # Definition
///
/// `#[runtime::test]` is defined in the `corering-macros` crate, which only
/// implements the expansion. Use it through its re-export `runtime::test`;
/// its arguments and examples are documented in the `runtime` crate.
#[proc_macro_attribute]
pub fn test(
    args: proc_macro::TokenStream,
    item: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    entry(args.into(), item.into(), Kind::Test).into()
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// `syn` 2 has no `AttributeArgs`; this is its replacement.
type AttributeArgs = syn::punctuated::Punctuated<syn::Meta, syn::Token![,]>;

/// The arguments every attribute accepts, as listed in error messages.
const ACCEPTED: &str = "`entries`, `cores`, `crate`";

/// The largest submission queue the kernel accepts (`IORING_MAX_ENTRIES`).
const MAX_ENTRIES: u32 = 32768;

/// Which attribute is being expanded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

impl Kind {
    fn macro_name(self) -> &'static str {
        match self {
            Kind::Main => "runtime::main",
            Kind::Test => "runtime::test",
        }
    }
}

/// The validated arguments of one attribute.
///
/// Each field is one knob; `builder_chain` turns the set ones into calls on
/// `Builder`. Adding a knob (e.g. `cores`) is one field, one arm in
/// `Config::set` and one line in `builder_chain`.
#[derive(Default)]
struct Config {
    /// `entries = N`: `Builder::entries(N)`.
    entries: Option<u32>,
    /// `crate = "path"`: the path of the runtime crate.
    crate_path: Option<Path>,
    /// `cores = N`: `Builder::cores(N)`.
    cores: Option<u32>,
}

impl Config {
    /// Parses and validates the attribute's arguments.
    fn parse(args: TokenStream, kind: Kind) -> syn::Result<Config> {
        let args = AttributeArgs::parse_terminated.parse2(args)?;
        let mut config = Config::default();
        for arg in args {
            match arg {
                syn::Meta::NameValue(nv) => {
                    let name = arg_name(&nv.path)?;
                    config.set(&name, &nv, kind)?;
                }
                syn::Meta::Path(path) => {
                    let name = arg_name(&path)?;
                    let msg = match name.as_str() {
                        "entries" => {
                            "the `entries` argument requires a value, e.g. `entries = 256`"
                                .to_string()
                        }
                        "crate" => {
                            "the `crate` argument requires a value, e.g. `crate = \"runtime\"`"
                                .to_string()
                        }
                        "cores" => {
                            "the `cores` argument requires a value, e.g. `cores = 4`".to_string()
                        }
                        _ => unknown_argument(&name, kind),
                    };
                    return Err(syn::Error::new_spanned(path, msg));
                }
                syn::Meta::List(list) => {
                    let name = arg_name(&list.path)?;
                    let msg = format!(
                        "unknown argument `{name}(...)` in `#[{}]`; expected `name = value` \
                         with one of: {ACCEPTED}",
                        kind.macro_name()
                    );
                    return Err(syn::Error::new_spanned(list, msg));
                }
            }
        }
        Ok(config)
    }

    /// Records one `name = value` argument.
    fn set(&mut self, name: &str, nv: &syn::MetaNameValue, kind: Kind) -> syn::Result<()> {
        match name {
            "entries" => {
                if self.entries.is_some() {
                    return Err(syn::Error::new_spanned(nv, "`entries` set multiple times"));
                }
                self.entries = Some(parse_entries(&nv.value)?);
            }
            "crate" => {
                if self.crate_path.is_some() {
                    return Err(syn::Error::new_spanned(nv, "`crate` set multiple times"));
                }
                self.crate_path = Some(parse_path(&nv.value, "crate")?);
            }
            "cores" => {
                if self.cores.is_some() {
                    return Err(syn::Error::new_spanned(nv, "`cores` set multiple times"));
                }
                let n = parse_u32(&nv.value, "cores")?;
                if n == 0 {
                    return Err(syn::Error::new_spanned(&nv.value, "`cores` may not be 0"));
                }
                self.cores = Some(n);
            }
            _ => return Err(syn::Error::new_spanned(nv, unknown_argument(name, kind))),
        }
        Ok(())
    }

    /// `Builder::new()` followed by one call per knob that was set.
    fn builder_chain(&self, crate_path: &TokenStream, span: Span) -> TokenStream {
        let mut rt = quote_spanned! {span=> #crate_path::Builder::new() };
        if let Some(n) = self.entries {
            rt = quote_spanned! {span=> #rt.entries(#n) };
        }
        if let Some(n) = self.cores {
            let n = n as usize;
            rt = quote_spanned! {span=> #rt.cores(#n) };
        }
        rt
    }
}

/// The argument's name, which must be a single identifier (or `crate`).
fn arg_name(path: &Path) -> syn::Result<String> {
    // `crate` is a keyword, so `Path::get_ident` does not see it as one; it
    // is still a single segment without arguments.
    match (path.leading_colon, path.segments.len()) {
        (None, 1) if path.segments[0].arguments.is_none() => Ok(path.segments[0].ident.to_string()),
        _ => Err(syn::Error::new_spanned(
            path,
            format!("expected an argument name, one of: {ACCEPTED}"),
        )),
    }
}

/// The message for an argument this runtime does not know.
fn unknown_argument(name: &str, kind: Kind) -> String {
    let hint = match name {
        "flavor" | "worker_threads" | "multi_thread" | "current_thread" => {
            "; this runtime is thread-per-core and has no runtime flavors"
        }
        "start_paused" | "unhandled_panic" | "name" => "; it is a tokio argument",
        _ => "",
    };
    format!(
        "unknown argument `{name}` in `#[{}]`; expected one of: {ACCEPTED}{hint}",
        kind.macro_name()
    )
}

/// `entries = N`: an integer literal, a power of two from 1 to 32768.
fn parse_entries(value: &syn::Expr) -> syn::Result<u32> {
    let n = parse_u32(value, "entries")?;
    if n == 0 || n > MAX_ENTRIES || !n.is_power_of_two() {
        return Err(syn::Error::new_spanned(
            value,
            format!(
                "`entries` must be a power of two between 1 and {MAX_ENTRIES}, got {n}; \
                 try {}",
                suggest_entries(n)
            ),
        ));
    }
    Ok(n)
}

/// A nearby valid value for `entries`, for the error message.
fn suggest_entries(n: u32) -> u32 {
    n.clamp(1, MAX_ENTRIES).next_power_of_two()
}

/// An unsuffixed (or `u32`-suffixed) integer literal that fits in a `u32`.
fn parse_u32(value: &syn::Expr, field: &str) -> syn::Result<u32> {
    let lit = match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(lit),
            ..
        }) => lit,
        other => {
            return Err(syn::Error::new_spanned(
                other,
                format!("`{field}` must be an integer literal, e.g. `{field} = 256`"),
            ))
        }
    };
    if !matches!(lit.suffix(), "" | "u32") {
        return Err(syn::Error::new_spanned(
            lit,
            format!("`{field}` must be an unsuffixed integer literal"),
        ));
    }
    lit.base10_parse::<u32>().map_err(|e| {
        syn::Error::new_spanned(
            lit,
            format!("`{field}` must be a non-negative integer that fits in a u32: {e}"),
        )
    })
}

/// `crate = "path"`: a string literal holding a path.
fn parse_path(value: &syn::Expr, field: &str) -> syn::Result<Path> {
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.parse::<Path>().map_err(|_| {
            syn::Error::new_spanned(
                s,
                format!(
                    "failed to parse the value of `{field}` as a path: \"{}\"",
                    s.value()
                ),
            )
        }),
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{field}` must be a string literal holding a path, e.g. `{field} = \"runtime\"`"
            ),
        )),
    }
}

/// Checks the function itself: `async`, and for `main` and tests no
/// arguments and no generics; tests must not carry a second `#[test]`.
fn check_item(input: &ItemFn, kind: Kind) -> syn::Result<()> {
    if input.sig.asyncness.is_none() {
        let msg = "the `async` keyword is missing from the function declaration";
        return Err(syn::Error::new_spanned(input.sig.fn_token, msg));
    }

    let (what, checked) = match kind {
        Kind::Test => ("test functions", true),
        Kind::Main => ("the main function", input.sig.ident == "main"),
    };
    if checked {
        if !input.sig.inputs.is_empty() {
            let msg = format!("{what} cannot accept arguments");
            return Err(syn::Error::new_spanned(&input.sig.inputs, msg));
        }
        let generics = &input.sig.generics;
        if !generics.params.is_empty() || generics.where_clause.is_some() {
            let msg = format!("{what} cannot have generic parameters");
            return Err(syn::Error::new_spanned(generics, msg));
        }
    }

    if kind == Kind::Test {
        if let Some(attr) = input.attrs().find(|attr| is_test_attribute(attr)) {
            let msg = "`#[test]` is redundant: `#[runtime::test]` already adds it; \
                       remove the `#[test]` attribute";
            return Err(syn::Error::new_spanned(attr, msg));
        }
    }
    Ok(())
}

/// Whether `attr` is `#[test]`, `#[core::prelude::*::test]` or
/// `#[std::prelude::*::test]` (with or without a leading `::`).
fn is_test_attribute(attr: &Attribute) -> bool {
    let path = match &attr.meta {
        syn::Meta::Path(path) => path,
        _ => return false,
    };
    if path.leading_colon.is_none()
        && path.segments.len() == 1
        && path.segments[0].arguments.is_none()
        && path.segments[0].ident == "test"
    {
        return true;
    }
    let candidates = [
        ["core", "prelude", "*", "test"],
        ["std", "prelude", "*", "test"],
    ];
    if path.segments.len() != candidates[0].len() {
        return false;
    }
    candidates.into_iter().any(|segments| {
        path.segments.iter().zip(segments).all(|(segment, name)| {
            segment.arguments.is_none() && (name == "*" || segment.ident == name)
        })
    })
}

// ---------------------------------------------------------------------------
// Expansion
// ---------------------------------------------------------------------------

/// Shared entry point of both attributes.
fn entry(args: TokenStream, item: TokenStream, kind: Kind) -> TokenStream {
    // If any step fails we still expand to something as close as possible to
    // the intended item, so that IDE completions keep working on it.
    let input: ItemFn = match syn::parse2(item.clone()) {
        Ok(it) => it,
        Err(e) => return token_stream_with_error(item, e),
    };
    // Problems with the function come first, then those with the arguments;
    // valid arguments (such as `crate`) are used even when the function is
    // wrong, so that the fallback expansion resolves.
    match (check_item(&input, kind), Config::parse(args, kind)) {
        (Ok(()), Ok(config)) => expand(input, kind, &config),
        (Err(e), Ok(config)) => token_stream_with_error(expand(input, kind, &config), e),
        (Ok(()), Err(e)) => token_stream_with_error(expand(input, kind, &Config::default()), e),
        (Err(mut e), Err(args_error)) => {
            e.combine(args_error);
            token_stream_with_error(expand(input, kind, &Config::default()), e)
        }
    }
}

/// `tokens` followed by `compile_error!(...)` for `error`.
fn token_stream_with_error(mut tokens: TokenStream, error: syn::Error) -> TokenStream {
    tokens.extend(error.into_compile_error());
    tokens
}

/// Whether `ty` mentions `impl Trait`, which may not be named in the
/// type check that the expansion adds.
fn contains_impl_trait(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::ImplTrait(_) => true,
        syn::Type::Array(t) => contains_impl_trait(&t.elem),
        syn::Type::Ptr(t) => contains_impl_trait(&t.elem),
        syn::Type::Reference(t) => contains_impl_trait(&t.elem),
        syn::Type::Slice(t) => contains_impl_trait(&t.elem),
        syn::Type::Tuple(t) => t.elems.iter().any(contains_impl_trait),
        syn::Type::Paren(t) => contains_impl_trait(&t.elem),
        syn::Type::Group(t) => contains_impl_trait(&t.elem),
        syn::Type::Path(t) => t.path.segments.iter().any(|segment| match &segment.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| match arg {
                syn::GenericArgument::Type(t) => contains_impl_trait(t),
                syn::GenericArgument::AssocType(t) => contains_impl_trait(&t.ty),
                _ => false,
            }),
            syn::PathArguments::Parenthesized(args) => {
                args.inputs.iter().any(contains_impl_trait)
                    || matches!(&args.output, syn::ReturnType::Type(_, t) if contains_impl_trait(t))
            }
            syn::PathArguments::None => false,
        }),
        _ => false,
    }
}

/// Turns the `async fn` into a synchronous one that blocks on its body.
fn expand(mut input: ItemFn, kind: Kind, config: &Config) -> TokenStream {
    input.sig.asyncness = None;

    // Type mismatches between the body and the declared return type are
    // reported by rustc at the generated `block_on` call; give it the span of
    // the body's last statement so the error points at user code.
    let (last_start, last_end) = {
        let mut last = input.stmts.last().cloned().unwrap_or_default().into_iter();
        let start = last.next().map_or_else(Span::call_site, |t| t.span());
        let end = last.last().map_or(start, |t| t.span());
        (start, end)
    };
    let at_last = Span::call_site().located_at(last_start);

    let crate_path = match &config.crate_path {
        Some(path) => path.to_token_stream(),
        None => quote_spanned! {at_last=> ::runtime },
    };
    let rt = config.builder_chain(&crate_path, at_last);

    // `mixed_site` keeps this local out of the user's namespace.
    let body_ident = syn::Ident::new("body", Span::mixed_site());
    let output_type = match &input.sig.output {
        syn::ReturnType::Default => quote! { () },
        syn::ReturnType::Type(_, ty) => quote! { #ty },
    };
    let nameable = match &input.sig.output {
        syn::ReturnType::Default => true,
        syn::ReturnType::Type(_, ty) => {
            !matches!(**ty, syn::Type::Never(_)) && !contains_impl_trait(ty)
        }
    };

    let body = input.body();
    let body = if kind == Kind::Test && nameable {
        // Tests block on `Pin<&mut dyn Future>`, so that all tests with one
        // output type share a single `block_on` instance (less to compile).
        // A mismatched output is reported at the coercion, so it carries
        // the span of the body's last statement.
        let body_at_last = syn::Ident::new("body", Span::mixed_site().located_at(last_start));
        let coerce = quote_spanned! {at_last=>
            let #body_ident: ::core::pin::Pin<
                &mut dyn ::core::future::Future<Output = #output_type>,
            > = #body_at_last;
        };
        quote! {
            let #body_ident = async move #body;
            let #body_ident = ::core::pin::pin!(#body_ident);
            #coerce
        }
    } else if nameable {
        // Checks the future's output against the declared return type at no
        // run-time cost, with an error on the async block.
        let check = quote_spanned! {at_last=>
            if false {
                let _: &dyn ::core::future::Future<Output = #output_type> = &#body_ident;
            }
        };
        quote! {
            let #body_ident = async move #body;
            #check
        }
    } else {
        quote! {
            let #body_ident = async move #body;
        }
    };

    // The explicit `return` keeps the result the function's value whatever
    // precedes it (see tokio-rs/tokio#4636).
    let last_block = quote_spanned! {last_end=>
        #[allow(
            clippy::expect_used,
            clippy::diverging_sub_expression,
            clippy::needless_return,
            clippy::unwrap_in_result
        )]
        {
            return #rt
                .build()
                .expect("failed to start the runtime")
                .block_on(#body_ident);
        }
    };

    // Do not add a second `#[test]` on top of a user-written one (that case
    // is already an error; one error is enough).
    let generated_attrs = if kind == Kind::Test && !input.attrs().any(is_test_attribute) {
        quote! { #[::core::prelude::v1::test] }
    } else {
        quote! {}
    };

    input.into_tokens(generated_attrs, body, last_block)
}

// ---------------------------------------------------------------------------
// A function item whose body is kept as tokens
// ---------------------------------------------------------------------------

/// A function item whose body stays unparsed, statement by statement.
///
/// Parsing the whole body with `syn::ItemFn` would be slower and would fail
/// on bodies that only make sense after further expansion.
struct ItemFn {
    outer_attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    brace_token: syn::token::Brace,
    inner_attrs: Vec<Attribute>,
    /// The statements, each with its terminating `;` if it has one.
    stmts: Vec<TokenStream>,
}

impl ItemFn {
    /// All attributes of the function, outer then inner.
    fn attrs(&self) -> impl Iterator<Item = &Attribute> {
        self.outer_attrs.iter().chain(self.inner_attrs.iter())
    }

    /// The body, in a form `quote!` can interpolate.
    fn body(&self) -> Body<'_> {
        Body {
            brace_token: self.brace_token,
            stmts: &self.stmts,
        }
    }

    /// The function with `generated_attrs` added and `body` then
    /// `last_block` as its block.
    fn into_tokens(
        self,
        generated_attrs: TokenStream,
        body: TokenStream,
        last_block: TokenStream,
    ) -> TokenStream {
        let mut tokens = TokenStream::new();
        for attr in self.outer_attrs {
            attr.to_tokens(&mut tokens);
        }
        // Inner attributes cannot go on the async block the body becomes, so
        // they move onto the function, as `syn` does.
        for mut attr in self.inner_attrs {
            attr.style = syn::AttrStyle::Outer;
            attr.to_tokens(&mut tokens);
        }
        // Generated attributes last, so that later macros see them.
        generated_attrs.to_tokens(&mut tokens);

        self.vis.to_tokens(&mut tokens);
        self.sig.to_tokens(&mut tokens);
        self.brace_token.surround(&mut tokens, |tokens| {
            body.to_tokens(tokens);
            last_block.to_tokens(tokens);
        });
        tokens
    }
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let outer_attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;

        let content;
        let brace_token = braced!(content in input);
        let inner_attrs = Attribute::parse_inner(&content)?;

        let mut buf = TokenStream::new();
        let mut stmts = Vec::new();
        while !content.is_empty() {
            if let Some(semi) = content.parse::<Option<syn::Token![;]>>()? {
                semi.to_tokens(&mut buf);
                stmts.push(std::mem::take(&mut buf));
                continue;
            }
            // One token tree at a time: the statements are not parsed.
            buf.extend([content.parse::<TokenTree>()?]);
        }
        if !buf.is_empty() {
            stmts.push(buf);
        }

        Ok(Self {
            outer_attrs,
            vis,
            sig,
            brace_token,
            inner_attrs,
            stmts,
        })
    }
}

/// The braced body of an [`ItemFn`], for interpolation.
struct Body<'a> {
    brace_token: syn::token::Brace,
    stmts: &'a [TokenStream],
}

impl ToTokens for Body<'_> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.brace_token.surround(tokens, |tokens| {
            for stmt in self.stmts {
                stmt.to_tokens(tokens);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{entry, Kind};

    fn expand_str(args: &str, item: &str, kind: Kind) -> String {
        entry(args.parse().unwrap(), item.parse().unwrap(), kind).to_string()
    }

    #[test]
    fn main_expands_to_block_on() {
        let out = expand_str("", "async fn main() { let x = 1; }", Kind::Main);
        assert!(!out.contains("async fn"), "{out}");
        assert!(out.contains(":: runtime :: Builder :: new ()"), "{out}");
        assert!(out.contains("block_on"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn entries_and_crate_are_used() {
        let out = expand_str(
            "entries = 8, crate = \"my::rt\"",
            "async fn main() {}",
            Kind::Main,
        );
        assert!(
            out.contains("my :: rt :: Builder :: new () . entries (8u32)"),
            "{out}"
        );
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn test_adds_test_attribute() {
        let out = expand_str("", "async fn t() {}", Kind::Test);
        assert!(
            out.contains("# [:: core :: prelude :: v1 :: test]"),
            "{out}"
        );
    }

    fn error_of(args: &str, item: &str, kind: Kind) -> String {
        let out = expand_str(args, item, kind);
        assert!(out.contains("compile_error"), "{out}");
        // The item is still emitted next to the error.
        assert!(out.contains("fn "), "{out}");
        out
    }

    #[test]
    fn errors() {
        let e = error_of("", "fn main() {}", Kind::Main);
        assert!(e.contains("the `async` keyword is missing"), "{e}");
        let e = error_of("", "async fn main(x: u32) {}", Kind::Main);
        assert!(e.contains("cannot accept arguments"), "{e}");
        let e = error_of("", "async fn main<T>() {}", Kind::Main);
        assert!(e.contains("generic parameters"), "{e}");
        let e = error_of("", "async fn t(x: u32) {}", Kind::Test);
        assert!(e.contains("cannot accept arguments"), "{e}");
        let e = error_of("", "#[test] async fn t() {}", Kind::Test);
        assert!(e.contains("redundant"), "{e}");
        let e = error_of("flavor = \"x\"", "async fn main() {}", Kind::Main);
        assert!(e.contains("unknown argument `flavor`"), "{e}");
        assert!(e.contains("`entries`, `cores`, `crate`"), "{e}");
        let e = error_of("foo", "async fn main() {}", Kind::Main);
        assert!(e.contains("unknown argument `foo`"), "{e}");
        let e = error_of("cores = 0", "async fn main() {}", Kind::Main);
        assert!(e.contains("`cores` may not be 0"), "{e}");
        let e = error_of("cores = 2, cores = 3", "async fn main() {}", Kind::Main);
        assert!(e.contains("`cores` set multiple times"), "{e}");
        for bad in ["0", "3", "65536", "\"8\"", "8u8", "-1"] {
            let e = error_of(
                &format!("entries = {bad}"),
                "async fn main() {}",
                Kind::Main,
            );
            assert!(e.contains("`entries` must be"), "{bad}: {e}");
        }
        let e = error_of(
            "entries = 8, entries = 16",
            "async fn main() {}",
            Kind::Main,
        );
        assert!(e.contains("multiple times"), "{e}");
        let e = error_of("crate = 5", "async fn main() {}", Kind::Main);
        assert!(e.contains("string literal"), "{e}");
        // Both problems are reported.
        let e = error_of("foo", "fn main() {}", Kind::Main);
        assert!(e.contains("the `async` keyword is missing"), "{e}");
        assert!(e.contains("unknown argument `foo`"), "{e}");
        // Valid arguments still shape the fallback expansion.
        let e = error_of("crate = \"my::rt\"", "fn main() {}", Kind::Main);
        assert!(e.contains("my :: rt :: Builder"), "{e}");
    }

    #[test]
    fn unparsable_item_is_kept() {
        let out = expand_str("", "struct S;", Kind::Main);
        assert!(out.starts_with("struct S ;"), "{out}");
        assert!(out.contains("compile_error"), "{out}");
    }

    #[test]
    fn nested_main_may_take_arguments() {
        let out = expand_str("", "async fn app(x: u32) -> u32 { x }", Kind::Main);
        assert!(!out.contains("compile_error"), "{out}");
    }
}
