"""The research agent: one run of the search / visit / reflect / answer / coding loop.

Top level holds the loop and what it is made of: the run (`loop`), its state
(`state`, with its diary's wording in `diary`; the one-line templates' renderer:
`wording`), the step schema (`schema`), what the model may do next (`gating`, with what
an effort preset switches off), what a step's action may use (`step`: StepContext, and
LoopHook, the points where the loop calls team mode and the re-check, `hooks`), running
the chosen action (`dispatch`) and what it came to (`outcomes`, which `loop` acts on;
`Stop` stays a value), what a prompt shows of the state, recomputed
before each one (`refresh`), the wall clock (`deadline`), the prompt
(`context`, rendered from `prompts/`; the limits it and the schema state: `limits`), the
events it emits (`events`) and its result (`result`). The sub-packages own the jobs the
loop delegates:

- `actions/`: one handler per action the model can choose;
- `steps/`: the loop's own steps, each an LLM pass or a state change over a toolkit
  module's rules of the same name: the evaluator's calls, the reported answer and its
  confidence (honesty), the re-check's calls, the editor pass and references
  (finalize), the query rewriter;
- `team/`: team mode only (a loop hook; the loop hands it how a child run is made).

The toolkit, plain functions over plain data (no state, deps, LLM client or prompt):

- `retrieval/`: ranking URLs, similarity, passages, the query rewriter's reply,
  evidence in view;
- `citations/`: references anchored to verbatim quotes, finalizing's plain part,
  markdown repair;
- `judging/`: the evaluator's checks and verdicts, honest not-found answers,
  confidence, the re-check's limits and replies.

The agent imports `deepsearch.llm`, `deepsearch.web` and `deepsearch.sandbox` only
through their plain types and the clients injected in `deps.AgentDeps`; never an SDK.
The loop and its steps sit above the toolkit, which sits above the vocabulary (`types`,
`limits`): import contracts in pyproject.toml, checked by `make lint`.
"""
