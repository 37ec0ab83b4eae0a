use clap::Parser;
use plinth::config::{Cli, Command, ServeOpts, UsersCommand};
use plinth::server;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    server::init_logging(&cli.opts);
    match cli.command.unwrap_or(Command::Serve(ServeOpts::default())) {
        Command::Serve(s) => server::serve(cli.opts, s).await,
        Command::Worker(w) => server::worker(cli.opts, w).await,
        Command::Migrate => server::migrate(cli.opts).await,
        Command::Users(UsersCommand::SetLevel { email, level }) => {
            server::set_level(cli.opts, &email, level).await
        }
    }
}
