package dev.ar4j.examples.llama;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.examples.llama.cli.AnswerFormat;
import dev.ar4j.examples.llama.cli.CommMode;
import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.cli.RunMode;
import dev.ar4j.examples.llama.engine.EngineMemory;
import dev.ar4j.examples.llama.engine.EngineSettings;
import dev.ar4j.examples.llama.engine.RankEngine;
import dev.ar4j.examples.llama.engine.RankGroup;
import dev.ar4j.examples.llama.engine.StepKind;
import dev.ar4j.examples.llama.engine.StepTiming;
import dev.ar4j.examples.llama.engine.StepTiming.Figures;
import dev.ar4j.examples.llama.model.ModelFolder;
import dev.ar4j.examples.llama.text.TextStream;
import dev.ar4j.examples.llama.text.Tokenizer;
import dev.ar4j.examples.llama.model.LlamaTensors;
import dev.ar4j.examples.llama.model.TensorParallelLayout;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * Runs {@code generate} or {@code bench} for each {@code --comm}: forms the group (one JVM with
 * every rank as a thread, or this process's rank under a launcher), opens one engine per rank,
 * captures the graphs, does the work, closes everything.
 */
final class Runner {

    static final Duration LOAD_TIMEOUT = Duration.ofMinutes(30);
    static final Duration STEP_TIMEOUT = Duration.ofMinutes(10);

    /** Why {@code --comm nccl-symm} is not offered yet. */
    static final String NCCL_SYMM_GAP = "is not implemented yet: the engine does not register its buffers as NCCL "
            + "windows (NcclCollectives.registerWindow) nor run the separate residual + RMSNorm (RmsNorm)";

    private Runner() {
    }

    /**
     * Whether a launcher started this process as one rank ({@code WORLD_SIZE} is set).
     *
     * @return {@code true} under torchrun and the like
     */
    static boolean launched() {
        return System.getenv("WORLD_SIZE") != null;
    }

    /**
     * Where a run's diagnostics go (the model line, the loading progress, generate's summary): standard error in
     * generate, whose standard output is the answer alone; standard output in bench, above its table.
     */
    static PrintStream info(LlamaOptions o, PrintStream out, PrintStream err) {
        return o.mode() == RunMode.GENERATE ? err : out;
    }

    static int run(LlamaOptions o, TensorParallelLayout layout, Tokenizer tokenizer, PrintStream printed,
                   PrintStream err) {
        boolean launched = launched();
        // Under a launcher every process is one rank: rank 0 prints the results.
        boolean printing = !launched || "0".equals(System.getenv("RANK"));
        PrintStream quiet = new PrintStream(java.io.OutputStream.nullOutputStream());
        PrintStream out = printing ? printed : quiet;
        PrintStream info = printing ? info(o, printed, err) : quiet;
        ModelFolder folder = null;
        try {
            if (o.model() != null) {
                folder = ModelFolder.open(o.model());
                LlamaTensors.check(folder, layout.config());
            }
            EngineSettings s = new EngineSettings(layout, o.context(), o.prompt().length, o.draft(), false, true,
                    o.seed(), o.shardAlone(), prefillChunk(), o.sampling(), o.batch());
            BenchTable table = o.mode() == RunMode.BENCH ? new BenchTable(out, ModelDescription.of(o, layout)
                    + (launched ? "; one JVM per rank" : "; GPUs " + Arrays.toString(o.deviceOfRank()))) : null;
            if (table != null && o.shardAlone()) {
                out.println("# " + shardNote(layout.tp()));
            }
            for (CommMode comm : o.comms()) {
                String skip = unavailable(o, comm);
                if (skip != null) {
                    if (table == null) {
                        err.println("ar4j-llama: --comm " + comm.flag() + ": " + skip);
                        return 2;
                    }
                    table.skipped(comm.flag(), skip);
                    continue;
                }
                Consumer<Communicator.Builder> cfg = b -> {
                    b.nccl(!o.ranksShareGpu())
                            .algorithmPolicy(comm == CommMode.NCCL ? Algorithm.NCCL : Algorithm.AUTO)
                            .stagingBytes(s.stagingBytes());
                    if (launched && o.shareGpu()) {
                        b.device(0);
                    }
                };
                try (RankGroup group = launched ? RankGroup.fromEnvironment(cfg) : RankGroup.threads(o.deviceOfRank(), cfg)) {
                    if (group.worldSize() != s.worldSize()) {
                        err.println("ar4j-llama: the launcher started " + group.worldSize() + " ranks but "
                                + (o.shardAlone() ? "--tp-shard-of runs one rank alone" : "--tp is " + layout.tp()));
                        return 2;
                    }
                    runOne(o, s, folder, group, comm, table, tokenizer, out, info);
                }
            }
            return 0;
        } finally {
            if (folder != null) {
                folder.close();
            }
        }
    }

    /** The system property that sets the prefill chunk (tokens per prefill step; default 1024). */
    static final String PREFILL_CHUNK_PROPERTY = "ar4j.llama.prefillChunk";

    private static int prefillChunk() {
        String v = System.getProperty(PREFILL_CHUNK_PROPERTY);
        if (v == null) {
            return EngineSettings.DEFAULT_PREFILL_CHUNK;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("-D" + PREFILL_CHUNK_PROPERTY + "=" + v + ": expected a number of tokens "
                    + "(at least 16; default " + EngineSettings.DEFAULT_PREFILL_CHUNK + ")");
        }
    }

    /**
     * What a bench of {@code --tp-shard-of N} measures, printed above its table.
     *
     * @param tp the split's degree N
     * @return the label
     */
    static String shardNote(int tp) {
        return "rank 0's shard of TP " + tp + ", alone: a projection, no communication. One rank (world size 1) "
                + "computes what rank 0 of a TP " + tp + " step computes (its heads, its MLP slice, its vocabulary "
                + "shard of the LM head); every all-reduce is a world-size-1 call that moves nothing between GPUs "
                + "(comm_% is their share), and the tokens mean nothing. The TP " + tp + " step it implies adds the "
                + "all-reduces measured between GPUs.";
    }

    private static String unavailable(LlamaOptions o, CommMode comm) {
        if (comm == CommMode.NCCL_SYMM) {
            return NCCL_SYMM_GAP;
        }
        if (comm == CommMode.NCCL && o.ranksShareGpu()) {
            return "NCCL refuses two ranks on one GPU (the ranks share a GPU here)";
        }
        return null;
    }

    private static void runOne(LlamaOptions o, EngineSettings s, ModelFolder folder, RankGroup group, CommMode comm,
                               BenchTable table, Tokenizer tokenizer, PrintStream out, PrintStream info) {
        List<RankEngine> engines = group.onEveryRank("loading the weights", LOAD_TIMEOUT,
                (i, c) -> RankEngine.open(c, s, folder, info));
        try {
            group.onEveryRank("capturing the graphs", STEP_TIMEOUT, (i, c) -> {
                engines.get(i).captureGraphs();
                return null;
            });
            if (table == null) {
                generate(o, group, engines, tokenizer, out, info);
            } else {
                int p = o.prompt().length;
                List<StepKind> kinds = o.draft() > 0 ? List.of(StepKind.PREFILL, StepKind.DECODE, StepKind.VERIFY)
                        : List.of(StepKind.PREFILL, StepKind.DECODE);
                long peak = 0;
                EngineMemory.Plan plan = null;
                for (StepKind k : kinds) {
                    List<Figures> figures = group.onEveryRank("bench " + k, STEP_TIMEOUT,
                            (i, c) -> StepTiming.measure(engines.get(i), k, p, o.steps(), 20));
                    table.row(comm.flag(), slowest(figures));
                    EngineMemory.Use use = group.onEveryRank("memory in use", STEP_TIMEOUT,
                            (i, c) -> engines.get(i).memoryUse()).get(0);
                    peak = Math.max(peak, use.inUse());
                    plan = use.plan();
                }
                table.memory(comm.flag(), plan, peak, engines.size());
                if (engines.get(0).communicator().worldSize() > 1) {
                    List<String> explained = group.onEveryRank("explaining the all-reduces", STEP_TIMEOUT,
                            (i, c) -> AllReduceSizes.of(s, p).stream()
                                    .map(z -> c.explainResidualRmsNorm(z.bytes(), s.layout().config().hiddenSize(),
                                            DType.BFLOAT16))
                                    .toList()).get(0);
                    table.allReduces(comm.flag(), AllReduceSizes.of(s, p), explained);
                }
                if (o.profile()) {
                    for (StepKind k : kinds) {
                        List<StepTiming.Profile> profiles = group.onEveryRank("profile " + k, STEP_TIMEOUT,
                                (i, c) -> StepTiming.profile(engines.get(i), k, p, 20));
                        table.profile(comm.flag(), profiles.get(0));
                    }
                }
            }
        } finally {
            group.onEveryRank("closing the engines", STEP_TIMEOUT, (i, c) -> {
                engines.get(i).close();
                return null;
            });
        }
    }

    /**
     * Generation on every rank (greedy, or sampled on the GPU), local rank 0's tokens printed as they come; the ranks' tokens compared;
     * with a draft, the verify steps checked against them; the summary line.
     */
    private static void generate(LlamaOptions o, RankGroup group, List<RankEngine> engines, Tokenizer tokenizer,
                                 PrintStream out, PrintStream info) {
        if (o.batch() > 1) {
            generateBatch(o, group, engines, tokenizer, out, info);
            return;
        }
        AnswerPrinter printer = printer(o, tokenizer, out);
        int[] stopTokens = stopTokens(tokenizer);
        int[] prompt = o.prompt();
        if (o.output() != AnswerFormat.TEXT) {
            info.println(AnswerPrinter.promptIdsLine(prompt));
        }
        List<Generated> made = group.onEveryRank("generating", STEP_TIMEOUT, (i, c) -> new GreedyLoop(
                Generation.steps(engines.get(i)), stopTokens, i == 0 ? printer : t -> { }, System::nanoTime)
                .run(prompt, o.steps()));
        printer.finish();
        int[] tokens = made.get(0).tokens();
        for (Generated g : made) {
            if (!Arrays.equals(g.tokens(), tokens)) {
                throw new IllegalStateException("the ranks generated different tokens: " + Arrays.toString(g.tokens())
                        + " and " + Arrays.toString(tokens));
            }
        }
        if (o.draft() > 0) {
            List<String> check = group.onEveryRank("verifying", STEP_TIMEOUT,
                    (i, c) -> Generation.verifyAgainstDecode(engines.get(i), prompt.length, tokens));
            info.println("verify (--draft " + o.draft() + "): " + check.get(0));
        }
        info.println(made.get(0).summary());
    }

    /**
     * Generation of a batch of prompts on every rank (greedy), each sequence's answer printed when the batch is done
     * ({@code [s] text}, or {@code tokens s: 1,2,3}), the ranks' tokens compared, the summary line.
     */
    private static void generateBatch(LlamaOptions o, RankGroup group, List<RankEngine> engines, Tokenizer tokenizer,
                                      PrintStream out, PrintStream info) {
        int[][] prompts = o.batchPrompts();
        if (prompts == null) {
            throw new IllegalStateException("generate --batch " + o.batch() + " without its prompts: resolve them with "
                    + "LlamaOptions.withBatchPrompts first");
        }
        int[] stopTokens = stopTokens(tokenizer);
        if (o.output() != AnswerFormat.TEXT) {
            for (int s = 0; s < prompts.length; s++) {
                info.println("sequence " + s + " " + AnswerPrinter.promptIdsLine(prompts[s]));
            }
        }
        List<List<Generated>> made = group.onEveryRank("generating a batch", STEP_TIMEOUT, (i, c) -> new BatchLoop(
                Generation.batchSteps(engines.get(i)), stopTokens, System::nanoTime).run(prompts, o.steps()));
        List<Generated> first = made.get(0);
        for (List<Generated> rank : made) {
            for (int s = 0; s < prompts.length; s++) {
                if (!Arrays.equals(rank.get(s).tokens(), first.get(s).tokens())) {
                    throw new IllegalStateException("the ranks generated different tokens for sequence " + s + ": "
                            + Arrays.toString(rank.get(s).tokens()) + " and " + Arrays.toString(first.get(s).tokens()));
                }
            }
        }
        for (int s = 0; s < prompts.length; s++) {
            int[] tokens = first.get(s).tokens();
            if (o.output() == AnswerFormat.TEXT) {
                // As the one-sequence stream prints it (Tokenizer.newTextStream()): special tokens left out.
                int[] shown = first.get(s).stopToken() >= 0 ? Arrays.copyOf(tokens, tokens.length - 1) : tokens;
                out.println("[" + s + "] " + tokenizer.decode(shown, true));
            } else {
                out.println(AnswerPrinter.idsLine("tokens " + s + ": ", tokens));
            }
        }
        out.flush();
        info.println(BatchLoop.summary(first));
    }

    /**
     * How the answer is printed: text through a new text stream of the tokenizer, or token ids.
     *
     * @param o         the options ({@link LlamaOptions#output()} resolved)
     * @param tokenizer the model's tokenizer, or {@code null}
     * @param out       where the answer goes
     * @return the printer
     */
    static AnswerPrinter printer(LlamaOptions o, Tokenizer tokenizer, PrintStream out) {
        if (o.output() != AnswerFormat.TEXT) {
            return AnswerPrinter.ids(out);
        }
        TextStream text = tokenizer.newTextStream();
        return AnswerPrinter.text(out, text::push, text::finish, stopTokens(tokenizer));
    }

    /**
     * Where generation stops: the tokenizer's end-of-sequence ids ({@code generation_config.json}, {@code config.json}
     * or {@code tokenizer_config.json}); none without a tokenizer.
     */
    static int[] stopTokens(Tokenizer tokenizer) {
        return tokenizer == null ? new int[0] : tokenizer.eosTokenIds();
    }

    /** The local rank with the longest median (a step is as slow as its slowest rank). */
    private static Figures slowest(List<Figures> figures) {
        Figures worst = figures.get(0);
        for (Figures f : figures) {
            if (f.medianMillis() > worst.medianMillis()) {
                worst = f;
            }
        }
        return worst;
    }
}
