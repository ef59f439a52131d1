//! The engine commands: `index`, `search` and `eval`. Each starts the same
//! [`Engine`](wayfinder_workers::Engine) the router plugin runs, publishes one catalog and
//! waits for its vectors (drawing a progress bar while texts are embedded).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wayfinder_supergraph::{Catalog, CatalogOptions, ContractFilter};
use wayfinder_workers::engine::Explained;
use wayfinder_workers::eval::{evaluate, read_questions, score, EvalReport, Metrics, Question};
use wayfinder_workers::rank::features;
use wayfinder_workers::{
    Engine, EngineConfig, IndexReport, ModelTuning, Params, Pooling, RedisConfig, SearchRequest,
};

/// Where the model, runtime and cache live, and how many threads embed.
#[derive(Args, Clone)]
pub struct EngineArgs {
    /// Folder `scripts/setup` fetched the runtime and model into (and where the cache goes).
    #[arg(long, env = "WAYFINDER_HOME", default_value = ".wayfinder")]
    home: PathBuf,
    /// Embedding worker threads (at most the machine's cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Keep vectors in memory only: neither read nor write the cache.
    #[arg(long)]
    no_cache: bool,
    /// Rank with the params in this JSON file (as router.yaml's `index.ranking`: what it leaves
    /// out takes the default model's value; docs/RANKING.md lists every field and stage).
    #[arg(long, value_name = "FILE")]
    params: Option<PathBuf>,
    /// A fleet's shared vector store (`redis://[user:password@]host:port`), as the router's
    /// `index.redis`: vectors another process embedded are taken from it, new ones written.
    /// Namespace `wayfinder`, TTL 30 days, timeout 500 ms; indexing goes on without it.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
}

/// Another ONNX sentence-embedding model than the default the set-up fetches, as `index.model`
/// in router.yaml chooses one, so that `eval` can measure a model before a router runs it.
#[derive(Args, Clone)]
struct ModelArgs {
    /// The model file: inputs `input_ids`, `attention_mask` (and `token_type_ids` if it has
    /// them), output `[batch, tokens, dimension]`.
    #[arg(long, requires_all = ["model_tokenizer", "model_dimension"])]
    model_onnx: Option<PathBuf>,
    /// The model's Hugging Face `tokenizer.json`.
    #[arg(long, requires = "model_onnx")]
    model_tokenizer: Option<PathBuf>,
    /// Width of the model's vectors.
    #[arg(long, requires = "model_onnx", value_parser = clap::value_parser!(u32).range(1..))]
    model_dimension: Option<u32>,
    /// `mean` (sentence-transformers) or `cls` (bge-style).
    #[arg(long, requires = "model_onnx", value_parser = parse_pooling)]
    model_pooling: Option<Pooling>,
    /// Prepended to every query (e5/bge-style models expect one).
    #[arg(long, requires = "model_onnx")]
    model_query_prefix: Option<String>,
    /// A tuning of the model's weights (bench/fit/tune.py) fitted for its file, or `none` for
    /// the file as it is; by default the built-in one when the model is the default.
    #[arg(long, value_parser = parse_tuning)]
    model_tuning: Option<ModelTuning>,
}

fn parse_tuning(text: &str) -> Result<ModelTuning, String> {
    Ok(ModelTuning::named(text))
}

fn parse_pooling(text: &str) -> Result<Pooling, String> {
    match text {
        "mean" => Ok(Pooling::Mean),
        "cls" => Ok(Pooling::Cls),
        _ => Err(format!(
            "unknown pooling `{text}`: expected `mean` or `cls`"
        )),
    }
}

impl EngineArgs {
    fn config(&self) -> anyhow::Result<EngineConfig> {
        let mut config = EngineConfig::default_in(&self.home);
        let model = &self.model;
        if let (Some(onnx), Some(tokenizer), Some(dimension)) = (
            &model.model_onnx,
            &model.model_tokenizer,
            model.model_dimension,
        ) {
            config.model.onnx = onnx.clone();
            config.model.tokenizer = tokenizer.clone();
            config.model.dimension = dimension as usize;
            config.model.pooling = model.model_pooling.unwrap_or_default();
            config.model.query_prefix = model.model_query_prefix.clone().unwrap_or_default();
        }
        config.model.tuning = model.model_tuning.clone().unwrap_or_default();
        if let Some(workers) = self.workers {
            config.workers = workers;
        }
        if self.no_cache {
            config.cache_dir = None;
        }
        config.redis = self
            .redis
            .as_ref()
            .map(|url| RedisConfig::at(vec![url.clone()]));
        if let Some(path) = &self.params {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the ranking params {}", path.display()))?;
            let params: Params = serde_json::from_str(&text)
                .with_context(|| format!("bad ranking params in {}", path.display()))?;
            config.ranking = Some(params);
        }
        Ok(config)
    }
}

/// An engine with `schema` published and indexed.
struct Indexed {
    engine: Engine,
    report: IndexReport,
    lexical_seconds: f64,
}

fn index_schema(schema: &Path, args: &EngineArgs, require_model: bool) -> anyhow::Result<Indexed> {
    let catalog = Arc::new(Catalog::from_file(schema, CatalogOptions::default())?);
    for warning in catalog.warnings() {
        eprintln!("wayfinder: warning: {}:{warning}", catalog.source_name());
    }
    let engine = Engine::start(args.config()?)?;
    if let Some(error) = engine.model_error() {
        if require_model {
            anyhow::bail!("{error}");
        }
        eprintln!("wayfinder: warning: {error}; searching lexically only");
    }
    if let Some(warning) = engine.cache_warning() {
        eprintln!("wayfinder: warning: {warning}");
    }
    let published = engine.publish(catalog)?;
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} embedding {pos}/{len} texts [{bar:30}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let report = loop {
        if let Some(report) = engine.wait_indexed(published.publication, Duration::from_millis(200))
        {
            break report;
        }
        let (done, total, rate) = engine.progress();
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(format!("{rate:.0} texts/s"));
    };
    bar.finish_and_clear();
    for (shard, error) in &report.failed_shards {
        eprintln!("wayfinder: warning: shard {shard} is lexical-only: {error}");
    }
    for warning in &report.warnings {
        eprintln!("wayfinder: warning: {warning}");
    }
    Ok(Indexed {
        engine,
        report,
        lexical_seconds: published.lexical_seconds,
    })
}

pub fn index(schema: &Path, args: &EngineArgs) -> anyhow::Result<()> {
    let indexed = index_schema(schema, args, true)?;
    let report = &indexed.report;
    println!("documents      {}", report.documents);
    println!(
        "texts          {} (embedded texts the views are made of)",
        report.texts
    );
    println!(
        "shards         {} ({} rebuilt)",
        report.shards, report.shards_rebuilt
    );
    println!("embedded now   {}", report.embedded);
    println!(
        "from cache     {}",
        report.reused.saturating_sub(report.from_redis)
    );
    if args.redis.is_some() {
        println!("from Redis     {}", report.from_redis);
    }
    println!("lexical ready  {:.2} s", indexed.lexical_seconds);
    println!("seconds        {:.2}", report.seconds);
    println!("texts/s        {:.1}", report.texts_per_second());
    if !report.failed_shards.is_empty() {
        anyhow::bail!(
            "{} shard(s) could not be indexed",
            report.failed_shards.len()
        );
    }
    Ok(())
}

#[derive(Args)]
pub struct SearchArgs {
    /// Results to print.
    #[arg(long, default_value_t = 10)]
    first: usize,
    /// Only results with at least this score.
    #[arg(long)]
    min_score: Option<f64>,
    /// Continue after this cursor (from an earlier page of the same search).
    #[arg(long)]
    after: Option<String>,
    /// Search as a tenant whose contract includes these `@tag`s (repeatable).
    #[arg(long = "include-tag")]
    include_tags: Vec<String>,
    /// ... and excludes these `@tag`s (repeatable).
    #[arg(long = "exclude-tag")]
    exclude_tags: Vec<String>,
}

pub fn search(
    schema: &Path,
    words: &str,
    search: &SearchArgs,
    args: &EngineArgs,
) -> anyhow::Result<()> {
    let indexed = index_schema(schema, args, false)?;
    let contract = ContractFilter {
        include_tags: search.include_tags.iter().cloned().collect(),
        exclude_tags: search.exclude_tags.iter().cloned().collect(),
    };
    let started = Instant::now();
    let results = indexed.engine.search(&SearchRequest {
        query: words,
        first: search.first,
        after: search.after.as_deref(),
        min_score: search.min_score,
        contract: Some(&contract),
        ..SearchRequest::default()
    })?;
    let elapsed = started.elapsed();
    let mut out = std::io::stdout().lock();
    for hit in &results.hits {
        let path = results
            .paths_to_root(hit.member)
            .into_iter()
            .next()
            .map(|p| p.join(" > "))
            .unwrap_or_else(|| "-".into());
        writeln!(out, "{:.3}  {}  {}", hit.score, hit.coordinate, path)?;
    }
    if let Some(last) = results.hits.last() {
        writeln!(out, "next page: --after {}", last.cursor)?;
    }
    eprintln!(
        "{} results, {:?} mode, generation {}, {:.1} ms",
        results.hits.len(),
        results.mode,
        results.generation,
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}

/// `sets` is schema, questions, schema, questions, ...: each set is indexed and searched on its
/// own engine, then its answers join the pool.
pub fn eval(
    sets: &[PathBuf],
    out: Option<&Path>,
    features: Option<&Path>,
    args: &EngineArgs,
) -> anyhow::Result<()> {
    if !sets.len().is_multiple_of(2) {
        anyhow::bail!(
            "eval takes a schema and a questions file for each set; `{}` has no questions file",
            sets[sets.len() - 1].display()
        );
    }
    let several = sets.len() > 2;
    let mut pooled = Vec::new();
    let mut params = None;
    let mut feature_lines = features
        .map(|path| {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let mut writer = std::io::BufWriter::new(file);
            writeln!(
                writer,
                "{}",
                serde_json::json!({ "names": features::NAMES })
            )?;
            anyhow::Ok((path, writer))
        })
        .transpose()?;
    for pair in sets.chunks(2) {
        let (schema, questions_file) = (&pair[0], &pair[1]);
        let questions = read_questions(questions_file)?;
        let indexed = index_schema(schema, args, false)?;
        if let Some((path, writer)) = &mut feature_lines {
            for question in &questions {
                let explained = indexed.engine.explain(&question.query)?;
                write_features(writer, question, &explained)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        let report = evaluate(&indexed.engine, &questions)?;
        params = Some(indexed.engine.params().clone());
        if several {
            println!("{} on {}", questions_file.display(), schema.display());
        }
        print_report(&report);
        pooled.extend(report.answers);
    }
    if let Some(out) = out {
        let mut lines = String::new();
        for answer in &pooled {
            let line = serde_json::json!({
                "id": answer.id,
                "style": answer.style,
                "results": answer.results,
                "deep_rank": answer.deep_rank,
                "found": answer.found,
                "best_score": answer.best_score,
            });
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        std::fs::write(out, lines).with_context(|| format!("cannot write {}", out.display()))?;
        // The params beside the answers, so a run says how it ranked.
        let beside = params_path(out);
        let params = serde_json::to_string_pretty(&params)? + "\n";
        std::fs::write(&beside, params)
            .with_context(|| format!("cannot write {}", beside.display()))?;
    }
    if several {
        println!("pooled over {} sets", sets.len() / 2);
        print_report(&score(pooled));
    }
    Ok(())
}

/// One question's line of `eval --features`: the question, then its candidates' coordinates
/// and feature rows (four decimals).
fn write_features(
    out: &mut impl std::io::Write,
    question: &Question,
    explained: &Explained,
) -> std::io::Result<()> {
    let head = serde_json::json!({
        "id": question.id,
        "schema": question.schema,
        "query": question.query,
        "style": question.style(),
        // A description pair (`style: "description"`): fitting data, never a figure.
        "pair": question.style.as_deref() == Some("description"),
        "expected": question.expected,
        "inputs": question.inputs,
        "candidates": explained.coordinates,
    })
    .to_string();
    write!(out, "{},\"rows\":[", &head[..head.len() - 1])?;
    for (i, row) in explained.rows.iter().enumerate() {
        out.write_all(if i == 0 { b"[" } else { b",[" })?;
        for (j, value) in row.iter().enumerate() {
            let sep = if j == 0 { "" } else { "," };
            let value = if value.is_finite() { *value } else { 0.0 };
            let text = format!("{value:.4}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            write!(
                out,
                "{sep}{}",
                if text.is_empty() || text == "-" {
                    "0"
                } else {
                    text
                }
            )?;
        }
        out.write_all(b"]")?;
    }
    writeln!(out, "]}}")
}

/// Where `eval --out FILE` records the params it ranked with: `FILE.params.json`.
fn params_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".params.json");
    PathBuf::from(name)
}

fn print_report(report: &EvalReport) {
    println!(
        "{:<22} {:>4} {:>6} {:>6} {:>6} {:>7}",
        "kind", "n", "R@1", "R@5", "R@10", "MRR@10"
    );
    let row = |name: &str, m: &Metrics| {
        println!(
            "{:<22} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3}",
            name, m.questions, m.recall_at_1, m.recall_at_5, m.recall_at_10, m.mrr_at_10
        )
    };
    for (kind, metrics) in &report.by_kind {
        row(kind, metrics);
    }
    if report.by_style.len() > 1 || report.tasks.questions > 0 {
        for (style, metrics) in &report.by_style {
            row(&format!("style {}", style.as_str()), metrics);
        }
    }
    row("overall", &report.overall);
    println!("texts embedded per question: {:.2}", report.texts);
    let tasks = &report.tasks;
    if tasks.questions > 0 {
        println!(
            "{:<22} {:>4} {:>6} {:>6} {:>9}",
            "tasks", "n", "FR@20", "FR@50", "all@20"
        );
        println!(
            "{:<22} {:>4} {:>6.3} {:>6.3} {:>9.3}",
            "style task",
            tasks.questions,
            tasks.field_recall_at_20,
            tasks.field_recall_at_50,
            tasks.complete_at_20
        );
    }
}
