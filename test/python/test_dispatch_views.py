"""The op views of the flow phase (`ir_helpers.dispatches`): a dispatch's load and store
(`DispatchTensorAccess`), a flow.tensor.reshape (`FlowReshape`) and a dispatch's argument
dims (`Workgroups.argument_dims`), each checked on ops with dynamic dims, offsets, sizes and
strides, where reading the wrong operand segment gives another value."""

from __future__ import annotations

from iree.compiler import ir

from iree_fusions.compiler import ir_helpers as h
from support.matchers import parsed

DYN = ir.ShapedType.get_dynamic_size()
CASE = """util.func public @f(%src: tensor<?x?xf32>, %n: index, %m: index, %o: index,
                       %s: index, %t: index) -> tensor<?x4xf32> {
  %r = flow.tensor.reshape %src : tensor<?x?xf32>{%n, %m} -> tensor<?x4xf32>{%t}
  %d = flow.dispatch.workgroups[%n](%src, %n, %m, %o, %s, %t) : (tensor<?x?xf32>{%n, %m},
      index, index, index, index, index) -> tensor<?x4xf32>{%t} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<?x?xf32>>, %an: index,
       %am: index, %ao: index, %as: index, %at: index,
       %out: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<?x4xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [%ao, 0], sizes = [%at, 4],
        strides = [1, %as] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<?x?xf32>>{%an, %am}
        -> tensor<?x4xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %out, offsets = [0, 0], sizes = [%at, 4],
        strides = [1, 1] : tensor<?x4xf32>
        -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<?x4xf32>>{%at}
    flow.return
  }
  util.return %d : tensor<?x4xf32>
}"""


def _ops(block: ir.Block, name: str) -> list[ir.Operation]:
    return [op.operation for op in block.operations if op.operation.name == name]


def test_load_store_reshape_and_argument_dims():
    with ir.Context():
        module = parsed(CASE)
        func = module.body.operations[0]
        top = func.regions[0].blocks[0]
        n, m, o, s, t = list(top.arguments)[1:]
        (reshape,) = _ops(top, h.FLOW_TENSOR_RESHAPE)
        view = h.FlowReshape(reshape)
        assert view.source == top.arguments[0]
        assert view.source_dims == [n, m] and view.result_dims == [t]

        (dispatch,) = _ops(top, h.FLOW_DISPATCH_WORKGROUPS)
        wg = h.Workgroups(dispatch)
        # arguments: %src (dims %n, %m: operands 7 and 8 after workload 1 + 6 arguments)
        assert wg.argument_dims == [[7, 8], [], [], [], [], []]
        assert h.argument_dims(dispatch) == wg.argument_dims

        body = dispatch.regions[0].blocks[0]
        a, an, am, ao, as_, at, out = list(body.arguments)
        (load,) = _ops(body, h.DISPATCH_TENSOR_LOAD)
        (store,) = _ops(body, h.DISPATCH_TENSOR_STORE)
        read, write = h.DispatchTensorAccess(load), h.DispatchTensorAccess(store)
        assert read.tensor == a and read.value == load.results[0]
        assert read.tensor_dims == [an, am] and read.dynamic_sizes == [at]
        assert read.parts == ([DYN, 0], [DYN, 4], [1, DYN])
        assert write.tensor == out and write.value == load.results[0]
        assert write.tensor_dims == [at] and write.dynamic_sizes == [at]
        assert write.parts == ([0, 0], [DYN, 4], [1, 1])
