fn main() {
    eprintln!("pcct: the command-line tool arrives with the agent issue");
    std::process::exit(2);
}
