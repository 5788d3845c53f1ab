package forensics;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * A real single-node OpenSearch in this JVM, for tests.
 *
 * <pre>java -Xms512m -Xmx1g -cp target/opensearch-node.jar:$(cat target/classpath.txt) forensics.StartNode HOME PORT</pre>
 *
 * HOME holds config/, data/ and logs/ (made if missing); PORT is the HTTP port, 0 for any
 * free one. Once the node is started it prints exactly one line on stdout,
 * {@code READY http://127.0.0.1:PORT} (the HTTP transport's bound address), and runs until
 * stdin reaches end of file or the JVM is asked to stop (SIGTERM, SIGINT), then closes the
 * node. Logs go to HOME/logs/forensics-test.log; stray console output goes to stderr.
 *
 * Bootstrap (what bin/opensearch runs) is not used: it refuses to run as root, installs
 * the security manager and runs the production bootstrap checks. A {@link Node} is
 * constructed directly with its plugins taken from the classpath instead, as the test
 * framework's MockNode does ({@code ForensicsNode}: src/main/os2 for 2.x, src/main/os3 for
 * 3.x, where the constructor takes PluginInfo instead of classes).
 */
public final class StartNode {

    static final String CLUSTER_NAME = "forensics-test";
    static final String NODE_NAME = "forensics-node-0";

    /**
     * The plugins, one row each, by the class names it has had (the first found is taken):
     * HTTP and transport (required), then the analyzers a distribution has (where present).
     */
    static final String[][] PLUGINS = {
        {"org.opensearch.transport.Netty4Plugin", // 2.x
         "org.opensearch.transport.Netty4ModulePlugin"}, // 3.x
        {"org.opensearch.analysis.common.CommonAnalysisPlugin", // 2.x
         "org.opensearch.analysis.common.CommonAnalysisModulePlugin"}, // 3.x
    };

    private StartNode() {}

    public static void main(String[] args) throws Exception {
        final PrintStream ready = System.out; // the READY line only
        System.setOut(System.err);
        // as a distribution's launcher sets them: the node closes logging itself, and
        // log4j registers no MBeans (both must be set before log4j starts)
        setDefault("log4j.shutdownHookEnabled", "false");
        setDefault("log4j2.disable.jmx", "true");
        if (args.length != 2) {
            System.err.println("usage: StartNode HOME HTTP_PORT   (HTTP_PORT 0: any free port)");
            System.exit(2);
        }
        final Path home = Paths.get(args[0]).toAbsolutePath().normalize();
        final int httpPort = Integer.parseInt(args[1]);
        final Path config = home.resolve("config");
        Files.createDirectories(config);
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        try (InputStream in = StartNode.class.getResourceAsStream("log4j2.properties")) {
            Files.copy(in, config.resolve("log4j2.properties"), StandardCopyOption.REPLACE_EXISTING);
        }

        final Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", CLUSTER_NAME)
            .put("node.name", NODE_NAME)
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", Integer.toString(httpPort))
            .put("transport.port", "0") // any free port: nothing joins this node
            // tests run on small or nearly full disks: never refuse to allocate shards
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            // one node: an index's replicas could never be assigned (health stays yellow)
            .put("cluster.default_number_of_replicas", 0)
            // a 1 GB heap shared with the test's own requests: count what requests reserve,
            // not the whole heap (the real-memory parent breaker trips on GC timing)
            .put("indices.breaker.total.use_real_memory", false)
            .put("indices.breaker.total.limit", "70%")
            .put("indices.breaker.request.limit", "40%")
            .put("indices.breaker.fielddata.limit", "30%")
            .put("bootstrap.memory_lock", false)
            .put("action.auto_create_index", true)
            .build();

        LogConfigurator.registerErrorListener();
        final Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), config, () -> NODE_NAME);
        LogConfigurator.setNodeName(NODE_NAME);
        LogConfigurator.configure(environment);

        final Node node = new ForensicsNode(environment, plugins());
        final AtomicBoolean stopping = new AtomicBoolean();
        final CountDownLatch stopped = new CountDownLatch(1);
        final Runnable stop = () -> {
            if (!stopping.compareAndSet(false, true)) {
                try {
                    stopped.await(60, TimeUnit.SECONDS); // the other caller is closing it
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return;
            }
            try {
                node.close();
                if (!node.awaitClose(30, TimeUnit.SECONDS)) {
                    System.err.println("StartNode: the node did not close within 30 s");
                }
            } catch (IOException | RuntimeException e) {
                e.printStackTrace();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                stopped.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "forensics-stop-node"));

        try {
            node.start();
        } catch (Throwable e) {
            System.err.println("StartNode: the node did not start: " + e);
            e.printStackTrace();
            stop.run();
            System.exit(1);
        }

        final var address = node.injector().getInstance(HttpServerTransport.class)
            .boundAddress().publishAddress();
        ready.println("READY http://" + address.getAddress() + ":" + address.getPort());
        ready.flush();

        try {
            final byte[] buffer = new byte[256];
            while (System.in.read(buffer) != -1) {
                // whatever is written is ignored: only end of file counts
            }
        } catch (IOException e) {
            // a broken stdin is the caller gone: stop as well
        }
        stop.run();
        System.exit(0);
    }

    static void setDefault(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    static List<Class<? extends Plugin>> plugins() throws ClassNotFoundException {
        final List<Class<? extends Plugin>> found = new ArrayList<>();
        final ClassLoader loader = StartNode.class.getClassLoader();
        for (int i = 0; i < PLUGINS.length; i++) {
            Class<? extends Plugin> plugin = null;
            for (String name : PLUGINS[i]) {
                try {
                    plugin = Class.forName(name, false, loader).asSubclass(Plugin.class);
                    break;
                } catch (ClassNotFoundException e) {
                    // try the next name
                }
            }
            if (plugin != null) {
                found.add(plugin);
            } else if (i == 0) {
                throw new ClassNotFoundException(String.join(" or ", PLUGINS[i]) + " (not on the classpath)");
            }
        }
        return found;
    }
}
