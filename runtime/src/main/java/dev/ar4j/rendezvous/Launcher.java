package dev.ar4j.rendezvous;

import dev.ar4j.rendezvous.LaunchEnvironment.Source;

/** The launchers that set rank variables, with what each sets, for detection and messages. */
enum Launcher {
    TORCHRUN("torchrun", Source.TORCHRUN,
            "torchrun sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE together; set all four, or pass"
                    + " the values to LaunchEnvironment.builder()",
            "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
    SLURM("Slurm", Source.SLURM,
            "start the program with srun, which sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the tasks per"
                    + " node, or pass the values to LaunchEnvironment.builder()",
            "SLURM_PROCID"),
    OPEN_MPI("Open MPI", Source.OPEN_MPI,
            "mpirun sets OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK and"
                    + " OMPI_COMM_WORLD_LOCAL_SIZE together; start the program with mpirun, or pass the values"
                    + " to LaunchEnvironment.builder()",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE");

    final String displayName;
    final Source source;
    final String hint;
    final String[] markers;

    Launcher(String displayName, Source source, String hint, String... markers) {
        this.displayName = displayName;
        this.source = source;
        this.hint = hint;
        this.markers = markers;
    }
}
