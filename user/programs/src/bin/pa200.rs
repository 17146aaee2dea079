//! Page access program with 200 BSS pages (see pageaccess.rs).
#![no_std]
#![no_main]
#[path = "../pageaccess.rs"]
mod pageaccess;

pageaccess::program!(200);
