package dev.ar4j.examples.llama.model;

/**
 * One block of a checkpoint tensor that a rank holds, and where it goes: rows
 * {@code [firstRow, firstRow + rows)} and columns {@code [firstCol, firstCol + cols)} of the
 * row-major tensor {@code tensor} (of {@code sourceCols} columns) are copied, row by row, into the
 * rank's weight {@code target} (row-major, {@code cols} columns) from its row {@code targetRow}.
 *
 * @param tensor     the checkpoint tensor's name
 * @param target     the rank's weight the block goes into
 * @param firstRow   the block's first row in the tensor
 * @param rows       rows in the block
 * @param firstCol   the block's first column in the tensor
 * @param cols       columns in the block (the target's row length)
 * @param sourceCols columns of the whole tensor
 * @param targetRow  the target row the block's first row goes to
 */
public record ShardPiece(String tensor, WeightName target, long firstRow, long rows, long firstCol, long cols,
                         long sourceCols, long targetRow) {

    /**
     * Checks the block lies inside the tensor's columns.
     *
     * @throws IllegalArgumentException if it does not
     */
    public ShardPiece {
        if (rows < 0 || cols <= 0 || firstRow < 0 || firstCol < 0 || firstCol + cols > sourceCols || targetRow < 0) {
            throw new IllegalArgumentException("block rows [" + firstRow + ", +" + rows + ") cols [" + firstCol + ", +"
                    + cols + ") of " + tensor + " (" + sourceCols + " columns) is not a block of it");
        }
    }

    /**
     * Whether the block is whole rows (one contiguous run of bytes in the tensor).
     *
     * @return {@code true} when {@code cols == sourceCols}
     */
    public boolean contiguous() {
        return cols == sourceCols;
    }

    /**
     * The byte offset of the block's row {@code r} in the tensor.
     *
     * @param r            a row of the block, from 0
     * @param elementBytes bytes per element
     * @return {@code ((firstRow + r) * sourceCols + firstCol) * elementBytes}
     */
    public long sourceOffset(long r, int elementBytes) {
        return ((firstRow + r) * sourceCols + firstCol) * elementBytes;
    }

    /**
     * The byte offset of the block's row {@code r} in the target weight.
     *
     * @param r            a row of the block, from 0
     * @param elementBytes bytes per element
     * @return {@code (targetRow + r) * cols * elementBytes}
     */
    public long targetOffset(long r, int elementBytes) {
        return (targetRow + r) * cols * elementBytes;
    }
}
