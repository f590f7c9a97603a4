// The recording sink is @tick/testing's; this name stays for the suites that still import it from here.
export { startSink, type Sink, type SinkRequest } from "@tick/testing";
