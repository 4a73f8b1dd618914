/** The consumer check as a module: it requires only dev.ar4j.runtime (which requires dev.ar4j.cuda). */
module dev.ar4j.consumer {
    requires dev.ar4j.runtime;
}
