"""The reviewed differences: calls where Ember knowingly answers otherwise than PyTorch, each with why.

An entry matches a verdict by op id, form category, the call as written and the mismatch text (``fnmatch``
patterns). The API suite fails on any mismatch no entry matches, and on any entry that matches nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Excused:
    why: str
    ops: str = "*"
    category: str = "*"
    mismatch: str = "*"
    call: str = "*"

    def matches(self, op: str, category: str, call: str, mismatch: str) -> bool:
        """``ops`` may list alternatives: ``"isinf|isnan"``."""
        return (any(fnmatchcase(op, pattern) for pattern in self.ops.split("|"))
                and fnmatchcase(category, self.category) and fnmatchcase(call, self.call)
                and fnmatchcase(mismatch, self.mismatch))


_NUMBERS = ("A Python number stands for a 0-d tensor in every tensor parameter of every op, first operand, keyword "
            "and out= forms included (Ember's own composites are written so); PyTorch takes one only where it "
            "declares a Scalar overload, and binds such overloads positionally only. Where the number cannot serve "
            "(a 0-d convolution weight), Ember then raises the op's own error.")

EXCUSED: tuple[Excused, ...] = (
    # -- leniencies: Ember answers calls PyTorch's binding refuses ----------------------------------------------
    Excused(_NUMBERS, category="numbers as tensors", mismatch="PyTorch raises TypeError*"),
    Excused(_NUMBERS, call="*=2*", mismatch="PyTorch raises TypeError*Ember accepts"),
    Excused(_NUMBERS, category="out=", mismatch="PyTorch raises TypeError*Ember accepts"),
    Excused("A bare int stands for a one-element list in every int-list parameter (stride, dims, split sizes, "
            "a random tensor's size), as PyTorch takes it only for parameters declared with a length (int[1]).",
            category="int lists", mismatch="PyTorch raises TypeError*"),
    Excused("None for a parameter that has a default is that default (dim=None reduces every dim, bernoulli's "
            "p=None is the tensor's own probabilities, gradient's spacing=None is 1); PyTorch's binding refuses "
            "None where no overload declares the parameter optional.",
            category="wrong type", call="*None*", mismatch="PyTorch raises TypeError*Ember accepts"),
    Excused("Ember promotes the operands of a matrix product as those of every binary op (int @ float is "
            "float); PyTorch requires equal dtypes.", ops="python.*operators", mismatch="*same dtype*Ember accepts"),
    Excused("x[index] = tensor converts the tensor to x's dtype for every index kind, as PyTorch does for basic "
            "indexing; PyTorch refuses another dtype for advanced indexing (index_put).",
            ops="python.assignment", mismatch="*Index put requires the source and destination dtypes match*"),
    Excused("torch.range (deprecated) lacks the factory keywords layout and pin_memory; Ember's range takes them "
            "as every factory does.", ops="range", category="[do]*"),
    Excused("linalg.lu, lu_factor and lu_factor_ex with pivot=False: PyTorch implements LU without pivoting on "
            "CUDA only; Ember implements it on every device.", ops="linalg.lu*", call="*pivot=False*"),
    Excused("torch.embedding (the torch-level binding) does not check padding_idx against the table, where "
            "nn.functional.embedding does; Ember checks it in both.", ops="embedding", call="*padding_idx=2*"),
    Excused("An op on a tensor with no elements, in a dtype the op refuses (exponential_ of int64, cholesky of "
            "uint8): PyTorch skips its dtype check where there is nothing to compute, Ember checks every call.",
            call="*tensor((*0*), [iub][no]*)*", mismatch="PyTorch accepts, Ember raises *Dtype*"),
    # -- PyTorch's own irregularities that Ember does not copy -------------------------------------------------
    Excused("PyTorch's torch-level loss functions (torch.hinge_embedding_loss, ...) are undocumented bindings of "
            "its kernels: `reduction` is an int enum defaulting to 0 (none). Ember's torch-level names are the "
            "nn.functional forms (string reduction, default 'mean'), which ported programs call.",
            ops="*_loss"),
    Excused("torch.split and Tensor.split are Python functions in PyTorch (first parameter `tensor`, a NumPy int "
            "read as a list, AttributeError on a non-tensor); Ember's split is one op, which takes its input as "
            "`input` and refuses a non-tensor with TypeError, as every op does.", ops="split"),
    Excused("unsafe_split is split in Ember (PyTorch's alias of the same computation), which, as torch.split, "
            "takes no NumPy names; PyTorch's unsafe_split is a C++ binding that does.", ops="unsafe_split",
            category="numpy names"),
    Excused("Tensor.copy_ names its source `src` in PyTorch's documentation and in Ember; PyTorch's binding "
            "takes it only positionally.", ops="copy_", call="*src=*"),
    Excused("unflatten(dim, None): Ember's binder refuses None for the sizes (TypeError), PyTorch reads None as "
            "an empty list and refuses that (RuntimeError).", ops="unflatten", call="*, None)"),
    Excused("Tensor.to's leftovers: PyTorch reads a float as a device index (t.to(0.5) is t.to(0)) and a second "
            "string as a bad dtype (TypeError); Ember refuses the float and reads the string as a bad device "
            "(DeviceError).", ops="to", call="*.to(*[0'][.b]*"),
    Excused("set_ with a view that reaches past the end of the source's storage: PyTorch grows the storage, "
            "Ember refuses it (a view must fit the storage it shares, which other tensors may hold too).",
            ops="set_", mismatch="PyTorch accepts, Ember raises *as_strided*"),
    Excused("torch.norm is a Python function in PyTorch, which fails with AttributeError on a non-tensor; Ember "
            "raises TypeError.", ops="norm", mismatch="PyTorch raises AttributeError*Ember raises TypeError*"),
    Excused("NumPy arrays as operands of Python's operators: PyTorch returns NotImplemented for most and NumPy "
            "computes; its few exceptions (t == array converts the array, t != array does not; array / t works, "
            "array * t does not) are accidents of its bindings, which Ember does not copy.",
            ops="python.*operators", call="*ndarray*"),
    Excused("pin_memory=True needs an accelerator: Ember has one here (OpenCL on PoCL), the CPU build of PyTorch "
            "the suite runs against has none, so only PyTorch refuses.", mismatch="*pin_memory=True requires*"),
    Excused("cdist's compute_mode of another type than str: PyTorch's Python wrapper raises ValueError, Ember's "
            "binder the TypeError it raises for every str parameter.", ops="cdist",
            mismatch="PyTorch raises ValueError*Ember raises TypeError*"),
    Excused("linalg.matrix_norm(A, None): Ember reads ord=None as a bad value (ArgumentError, a ValueError and "
            "RuntimeError), PyTorch's binding as a bad type (TypeError).", ops="linalg.matrix_norm",
            call="*, None)"),
    Excused("linalg.lstsq with rcond on a rank-deficient system: PyTorch's default CPU driver (gelsy, a pivoted "
            "QR) and Ember's (an SVD, as gelsd) cut small singular values by different rules, so both return a "
            "least-squares solution but not the same one.", ops="linalg.lstsq", call="*rcond=*"),
    Excused("linalg.tensorsolve of two 0-d tensors (a 1x1 system PyTorch solves): Ember requires A to have "
            "more dims than B.", ops="linalg.tensorsolve", call="*tensor((), float32), *tensor((), float32)*"),
    Excused("binomial with a count that is not a whole number: Ember refuses it, PyTorch samples from it without "
            "a check (a distribution that does not exist).", ops="binomial", mismatch="*whole numbers*"),
    # -- overloads and dtypes Ember does not have ------------------------------------------------------------
    Excused("Dtypes PyTorch computes in and Ember's declarations refuse (found by the fuzzer): isinf/isnan of "
            "bools, distances and cosine similarity of integers, a scatter's src of another dtype (PyTorch "
            "casts it), renorm in float16, matrix_power of bools, dropout of integers with train=False (PyTorch "
            "returns the input without a look), median of an empty integer tensor (PyTorch returns NaN cast to "
            "int64).", ops="isinf|isnan|isfinite|pairwise_distance|cosine_similarity|*_scatter|renorm*|"
                           "linalg.matrix_power|dropout|median|nanmedian", category="fuzzed",
            mismatch="PyTorch accepts, Ember raises *"),
    Excused("PyTorch's legacy rule that a 1-D tensor with no elements joins anything holds in Ember's cat, not "
            "yet in hstack, vstack and the like.", ops="hstack|vstack|dstack|column_stack|row_stack",
            call="*tensor((0,)*"),
    Excused("trapezoid of y with no intervals along dim against sample points of another shape: PyTorch returns "
            "zeros without comparing the shapes, Ember compares them.", ops="trapz|trapezoid|cumulative_trapezoid",
            category="fuzzed", mismatch="PyTorch accepts, Ember raises ShapeError*"),
    Excused("Reinterpreting a tensor's bytes as another dtype (view(dtype), view_copy(dtype)) is not "
            "implemented.", ops="view*", call="*float64)"),
    Excused("The deprecated overloads linalg.pinv(input, rcond) and linalg.matrix_rank(input, tol), which "
            "PyTorch's docs replace by atol/rtol, are not implemented.", ops="linalg.[pm]*",
            call="*[(, ][rt][co][ol]*"),
    Excused("nuclear_norm(input, keepdim) (the overload without dim) is not implemented; nuclear_norm(input, "
            "dim, keepdim) is.", ops="nuclear_norm", call="*, False)"),
    Excused("narrow_copy has no out= form in Ember.", ops="narrow_copy", category="out="),
    Excused("Batched CSR (crow_indices of more than one dim) is not implemented, and float index tensors are "
            "refused rather than converted.", ops="sparse_csr_tensor"),
    Excused("sparse_coo_tensor checks its indices by default (Ember's check_sparse_tensor_invariants default is "
            "on, PyTorch's off), so is_coalesced=True on indices that are not sorted and unique is refused, "
            "where PyTorch trusts the flag.", ops="sparse_coo_tensor", call="*is_coalesced=True*"),
    Excused("sparse_coo_tensor's pin_memory and None values: Ember takes pin_memory in every form (and pins where "
            "an accelerator is); PyTorch only in some overloads. A None for values is a missing argument in Ember "
            "(TypeError), a value whose dtype cannot be inferred in PyTorch (RuntimeError).",
            ops="sparse_coo_tensor", call="*[pN][io][nn]*"),
    Excused("atol/rtol (and rcond/tol) given as tensors of several elements, one tolerance per matrix of a "
            "batch, are not implemented; numbers and one-element tensors are.", ops="linalg.[pm]*",
            mismatch="*item(): a tensor with*"),
)


def excuse(op: str, category: str, call: str, mismatch: str) -> Excused | None:
    return next((e for e in EXCUSED if e.matches(op, category, call, mismatch)), None)
